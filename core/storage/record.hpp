#pragma once
/// One sample as stored in a dataset: a key (its file name or id), a class label and its
/// encoded bytes. The bytes are one blob however many parts the sample has, so that caches
/// and peers move a record whole without looking inside:
///   - `multipart == false`: `payload` is the sample's one part (a JPEG file, a v1 shard's
///     record), named by the key's extension (core/storage/record_parts.hpp);
///   - `multipart == true`: `payload` is a part container of named parts (`jpg`, `cls`,
///     `x.npy`, ...), as record_parts.hpp encodes and parses it (WebDataset samples, v2
///     shards' multipart records).
/// A part's bytes are never taken for anything but data unless `in_place` names the part.

#include <cstdint>
#include <string>
#include <vector>

namespace conveyor {

struct record {
  std::string key;
  std::int32_t label = 0;
  std::vector<std::uint8_t> payload;
  bool multipart = false;  ///< `payload` is a part container
  /// The parts (indices into the container, ascending) that this node's own dataset reader
  /// left in their file (dataset.map_parts): their bytes are descriptors of where they lie
  /// (core/storage/file_slice.hpp). Only a reader sets it, never from what bytes say; it is
  /// not sent to peers (a peer's record is data only).
  std::vector<std::uint32_t> in_place{};
};

}  // namespace conveyor
