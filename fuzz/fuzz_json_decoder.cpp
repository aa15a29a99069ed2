// libFuzzer target: arbitrary bytes as a JSON part. Parsing within limits and taking numbers
// as arrays (the whole document and a few key paths, every dtype, with and without an inner
// shape) must return errors or arrays whose size matches their shape, never crash, hang or
// allocate without bound.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/codecs/json_decoder.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace conveyor;
  auto document = json_document::parse(data, size);
  if (!document) {
    return 0;
  }
  for (const char* key : {"", "boxes", "a.0", "0.0.1"}) {
    for (dtype type : all_dtypes) {
      for (const auto& inner : {std::vector<std::int64_t>{}, std::vector<std::int64_t>{4}}) {
        auto array = json_array(*document, key, type, inner);
        if (array && array->bytes.size() != array->element_count() * size_of(array->type)) {
          std::abort();
        }
      }
    }
  }
  return 0;
}
