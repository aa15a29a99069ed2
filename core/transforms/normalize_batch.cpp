#include "core/transforms/normalize_batch.hpp"

#include <string>

namespace conveyor {
namespace {

template <class Out>
void normalize_all(const std::uint8_t* src, const uint8_batch_shape& s,
                   const normalize_coefficients& k, Out* dst) {
  for (int n = 0; n < s.samples; ++n) {
    for (int c = 0; c < s.channels; ++c) {
      for (std::size_t p = 0; p < s.pixels(); ++p) {
        store_normalized(dst + output_offset(s, n, c, p),
                         normalize_value(src[input_offset(s, n, c, p)], k, c));
      }
    }
  }
}

std::string shape_text(const uint8_batch_shape& s) {
  return std::to_string(s.samples) + "x" + std::to_string(s.channels) + "x" +
         std::to_string(s.height) + "x" + std::to_string(s.width) +
         (s.layout == pixel_layout::chw ? " (CHW)" : " (HWC)");
}

}  // namespace

expected<void> check_normalize_batch(const uint8_batch_shape& shape, dtype out) {
  if (shape.channels != 3 || shape.samples < 0 || shape.height < 0 || shape.width < 0) {
    return error{errc::invalid_argument,
                 "normalize needs a batch of 3-channel images, got " + shape_text(shape)};
  }
  if (out != dtype::float32 && out != dtype::bfloat16) {
    return error{errc::invalid_argument,
                 "normalize writes float32 or bfloat16, not " + std::string(name_of(out))};
  }
  return {};
}

expected<void> normalize_batch(const std::uint8_t* src, const uint8_batch_shape& shape,
                               const normalize_coefficients& k, dtype out, void* dst) {
  if (auto ok = check_normalize_batch(shape, out); !ok) {
    return ok;
  }
  if (out == dtype::float32) {
    normalize_all(src, shape, k, static_cast<float*>(dst));
  } else {
    normalize_all(src, shape, k, static_cast<std::uint16_t*>(dst));
  }
  return {};
}

}  // namespace conveyor
