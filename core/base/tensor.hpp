#pragma once
/// The bytes of host arrays (core/base/host_array.hpp), in memory that resize() leaves
/// uninitialised. Plain types; no OpenCV in this header.

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "conveyor/dtype.hpp"

namespace conveyor {

/// The dtype whose elements are `T` (uint8 or float32 only).
template <class T>
constexpr dtype dtype_of() noexcept {
  static_assert(std::is_same_v<T, std::uint8_t> || std::is_same_v<T, float>,
                "host_tensor holds uint8 or float32 elements");
  return std::is_same_v<T, float> ? dtype::float32 : dtype::uint8;
}

/// std::allocator, except that resize() leaves new elements of a trivial type uninitialised:
/// a step that writes every element of a tensor does not pay for zeroing it first (600 KB per
/// normalised 224 x 224 sample).
template <class T>
struct default_init_allocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = default_init_allocator<U>;
  };
  using std::allocator<T>::allocator;
  default_init_allocator() = default;
  template <class U>
  default_init_allocator(const default_init_allocator<U>& /*other*/) noexcept {}

  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// A tensor's bytes.
using tensor_bytes = std::vector<std::uint8_t, default_init_allocator<std::uint8_t>>;

}  // namespace conveyor
