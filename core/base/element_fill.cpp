#include "core/base/element_fill.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace conveyor {
namespace {

template <class T>
void fill_as(std::uint8_t* dest, std::size_t count, T value) {
  std::uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  const bool all_zero =
      std::all_of(bytes, bytes + sizeof(T), [](std::uint8_t b) { return b == 0; });
  if (all_zero) {
    std::memset(dest, 0, count * sizeof(T));
    return;
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::memcpy(dest + i * sizeof(T), &value, sizeof(T));
  }
}

std::uint32_t bits_of(float value) noexcept {
  std::uint32_t b = 0;
  std::memcpy(&b, &value, sizeof b);
  return b;
}

}  // namespace

std::uint16_t bfloat16_bits(float value) noexcept {
  const auto b = bits_of(value);
  if (std::isnan(value)) {
    return static_cast<std::uint16_t>((b >> 16) | 0x40U);
  }
  const std::uint32_t rounding = 0x7FFFU + ((b >> 16) & 1U);
  return static_cast<std::uint16_t>((b + rounding) >> 16);
}

std::uint16_t float16_bits(float value) noexcept {
  const auto b = bits_of(value);
  const auto sign = static_cast<std::uint16_t>((b >> 16) & 0x8000U);
  if (std::isnan(value)) {
    return static_cast<std::uint16_t>(sign | 0x7E00U);
  }
  const float magnitude = std::fabs(value);
  if (magnitude >= 65520.0F) {
    return static_cast<std::uint16_t>(sign | 0x7C00U);  // infinity
  }
  if (magnitude < 6.103515625e-05F) {  // subnormal: in units of 2^-24, rounded to even
    return static_cast<std::uint16_t>(
        sign | static_cast<std::uint16_t>(std::nearbyint(magnitude * 16777216.0F)));
  }
  const std::uint32_t m = bits_of(magnitude);
  const std::uint32_t exponent = ((m >> 23) - 127 + 15) << 10;
  std::uint32_t mantissa = m & 0x7FFFFFU;
  std::uint32_t half = exponent | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1FFFU;
  if (rest > 0x1000U || (rest == 0x1000U && (half & 1U) != 0)) {
    ++half;  // may carry into the exponent: still the right rounding
  }
  return static_cast<std::uint16_t>(sign | half);
}

void fill_elements(std::uint8_t* dest, std::size_t count, dtype type, double value) {
  switch (type) {
    case dtype::uint8:
      fill_as(dest, count, static_cast<std::uint8_t>(value));
      return;
    case dtype::int16:
      fill_as(dest, count, static_cast<std::int16_t>(value));
      return;
    case dtype::int32:
      fill_as(dest, count, static_cast<std::int32_t>(value));
      return;
    case dtype::int64:
      fill_as(dest, count, static_cast<std::int64_t>(value));
      return;
    case dtype::float16:
      fill_as(dest, count, float16_bits(static_cast<float>(value)));
      return;
    case dtype::bfloat16:
      fill_as(dest, count, bfloat16_bits(static_cast<float>(value)));
      return;
    case dtype::float32:
      fill_as(dest, count, static_cast<float>(value));
      return;
    case dtype::float64:
      fill_as(dest, count, value);
      return;
    case dtype::int8:
      fill_as(dest, count, static_cast<std::int8_t>(value));
      return;
    case dtype::bool_:
      fill_as(dest, count, static_cast<std::uint8_t>(value != 0));
      return;
  }
}

}  // namespace conveyor
