// libFuzzer target: arbitrary bytes as a .npy file. The header parser (on the whole input and
// on its preamble-sized prefix, as a caller that maps a volume does) and the whole decode must
// return errors or arrays whose size matches their shape, never crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/codecs/npy_decoder.hpp"
#include "core/codecs/npy_header.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace conveyor;
  if (auto header_size =
          npy_header_size(data, size < npy_preamble_bytes ? size : npy_preamble_bytes);
      header_size && *header_size <= size) {
    (void)parse_npy_header(data, static_cast<std::size_t>(*header_size), size);
  }
  auto array = decode_npy(data, size);
  if (array && array->bytes.size() != array->element_count() * size_of(array->type)) {
    std::abort();
  }
  return 0;
}
