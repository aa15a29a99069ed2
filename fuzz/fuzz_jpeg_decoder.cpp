// libFuzzer target: arbitrary bytes as an image. The header probe, the whole decode (at 1/1
// and 1/4, strict or not) and a region decode must return errors or pixels, never crash, hang
// or read out of bounds.
#include <cstddef>
#include <cstdint>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/jpeg_region.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace conveyor;
  auto info = probe_image(data, size);
  for (bool strict : {true, false}) {
    decode_options options;
    options.strict = strict;
    (void)decode_image(data, size, options);
    if (info && is_jpeg(data, size)) {
      options.scale_denom = 4;
      auto reduced = scaled_size(*info, options);
      (void)decode_image(data, size, options);
      if (reduced && reduced->width > 2 && reduced->height > 2) {
        (void)decode_jpeg_region(data, size, options,
                                 {1, reduced->height / 2, reduced->width - 2, reduced->height / 2});
      }
    }
  }
  return 0;
}
