#pragma once
/// One sample as stored in a dataset: a key (its file name or id), a class label and its
/// encoded bytes. The bytes are one blob however many parts the sample has, so that caches
/// and peers move a record whole without looking inside:
///   - `multipart == false`: `payload` is the sample's one part (a JPEG file, a v1 shard's
///     record), named by the key's extension (core/storage/record_parts.hpp);
///   - `multipart == true`: `payload` is a part container of named parts (`jpg`, `cls`,
///     `x.npy`, ...), as record_parts.hpp encodes and parses it (WebDataset samples, v2
///     shards' multipart records).

#include <cstdint>
#include <string>
#include <vector>

namespace conveyor {

struct record {
  std::string key;
  std::int32_t label = 0;
  std::vector<std::uint8_t> payload;
  bool multipart = false;  ///< `payload` is a part container
};

}  // namespace conveyor
