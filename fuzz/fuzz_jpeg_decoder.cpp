// libFuzzer target: arbitrary bytes as an image. The header probe, the whole decode (at 1/1
// and 1/4, strict or not), a region decode (through the input's restart index where it has
// one: mutations of an indexed seed reach the shortcut) and the --restart rewrite, then a
// region decode of what it wrote, must return errors or pixels, never crash, hang or read out
// of bounds.
#include <cstddef>
#include <cstdint>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/jpeg_region.hpp"
#include "core/codecs/jpeg_restart.hpp"

namespace {

void decode_lower_half(const std::uint8_t* data, std::size_t size,
                       const conveyor::decode_options& options) {
  using namespace conveyor;
  auto info = probe_image(data, size);
  if (!info) {
    return;
  }
  auto reduced = scaled_size(*info, options);
  if (reduced && reduced->width > 2 && reduced->height > 2) {
    (void)decode_jpeg_region(data, size, options,
                             {1, reduced->height / 2, reduced->width - 2, reduced->height / 2});
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace conveyor;
  auto info = probe_image(data, size);
  if (auto rewritten = add_restart_index(data, size); rewritten.jpeg) {
    decode_lower_half(rewritten.jpeg->data(), rewritten.jpeg->size(), decode_options{});
  }
  for (bool strict : {true, false}) {
    decode_options options;
    options.strict = strict;
    (void)decode_image(data, size, options);
    if (info && is_jpeg(data, size)) {
      options.scale_denom = 4;
      (void)decode_image(data, size, options);
      decode_lower_half(data, size, options);
    }
  }
  return 0;
}
