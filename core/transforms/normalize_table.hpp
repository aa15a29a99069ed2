#pragma once
/// normalize as table lookups: normalize_value() (normalize_math.hpp) of every byte value, per
/// channel, computed once; normalising is then one load per element, the same bits as the
/// formula, with no fused multiply-add to dispatch. Used where a float tensor is written from
/// uint8 pixels on the CPU: the normalize step (from the decoded interleaved image) and the
/// feeder, which normalises uint8 CHW samples as it writes them into a batch. Header-only, no
/// OpenCV.

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/transforms/normalize_math.hpp"

namespace conveyor {

/// Immutable after construction: shared by threads freely.
class normalize_table {
 public:
  explicit normalize_table(const normalize_coefficients& k) noexcept {
    for (int c = 0; c < 3; ++c) {
      for (int v = 0; v < 256; ++v) {
        value_[c][v] = normalize_value(static_cast<std::uint8_t>(v), k, c);
      }
    }
  }

  /// One row of `width` interleaved RGB pixels into the three planes' rows.
  void interleaved_row(const std::uint8_t* px, int width, float* r, float* g,
                       float* b) const noexcept {
    for (int x = 0; x < width; ++x, px += 3) {
      r[x] = value_[0][px[0]];
      g[x] = value_[1][px[1]];
      b[x] = value_[2][px[2]];
    }
  }

  /// The 256 values of channel `c`, by byte value.
  const float* channel(int c) const noexcept { return value_[c].data(); }

  /// `count` values of channel `c` (one plane of a CHW tensor).
  void plane(int c, const std::uint8_t* in, std::size_t count, float* out) const noexcept {
    const auto& t = value_[c];
    for (std::size_t i = 0; i < count; ++i) {
      out[i] = t[in[i]];
    }
  }

 private:
  std::array<std::array<float, 256>, 3> value_{};
};

}  // namespace conveyor
