#pragma once
/// A reduction of an image's size by num/denom, as a JPEG decoder gives in the DCT domain
/// (libjpeg-turbo: M/8 for M = 1..8). Plain data, shared by the decoder and the crop geometry.

#include <cstdint>

namespace conveyor {

struct scale_ratio {
  int num = 1;
  int denom = 1;
};

inline bool operator==(const scale_ratio& a, const scale_ratio& b) noexcept {
  return a.num == b.num && a.denom == b.denom;
}
inline bool operator!=(const scale_ratio& a, const scale_ratio& b) noexcept {
  return !(a == b);
}

/// True when `a` is a smaller reduction factor than `b` (compares num/denom exactly).
/// Precondition: both denominators > 0.
inline bool smaller_scale(const scale_ratio& a, const scale_ratio& b) noexcept {
  return std::int64_t{a.num} * b.denom < std::int64_t{b.num} * a.denom;
}

/// A side of `length` pixels at `scale`, rounded up as libjpeg rounds (TJSCALED).
/// Precondition: length >= 0, scale.denom > 0.
constexpr int scaled_length(int length, scale_ratio scale) noexcept {
  return static_cast<int>((std::int64_t{length} * scale.num + scale.denom - 1) / scale.denom);
}

}  // namespace conveyor
