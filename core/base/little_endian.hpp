#pragma once
/// Fixed-width little-endian loads and stores for on-disk and wire formats, independent of the
/// host's byte order and alignment.

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace conveyor::little_endian {

template <class T>
void store(std::uint8_t* out, T value) noexcept {
  static_assert(std::is_integral_v<T>);
  using U = std::make_unsigned_t<T>;
  auto u = static_cast<U>(value);
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[i] = static_cast<std::uint8_t>(u >> (8 * i));
  }
}

template <class T>
T load(const std::uint8_t* in) noexcept {
  static_assert(std::is_integral_v<T>);
  using U = std::make_unsigned_t<T>;
  U u = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    u = static_cast<U>(u | static_cast<U>(static_cast<U>(in[i]) << (8 * i)));
  }
  return static_cast<T>(u);
}

}  // namespace conveyor::little_endian
