#pragma once
/// One sample as stored in a dataset: a key (its file name or id), a class label and the
/// encoded bytes (e.g. a JPEG file).

#include <cstdint>
#include <string>
#include <vector>

namespace conveyor {

struct record {
  std::string key;
  std::int32_t label = 0;
  std::vector<std::uint8_t> payload;
  /// `payload` is a part container (core/storage/record_parts.hpp); false: it is one part,
  /// named by the key's extension.
  bool multipart = false;
};

}  // namespace conveyor
