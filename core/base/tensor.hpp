#pragma once
/// A dense host tensor in CHW layout that owns its bytes: what a transform chain hands to the
/// batcher. Plain value type; no OpenCV in this header.

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

/// channels x height x width elements of `type`, channel planes one after another (CHW).
/// Not synchronised: one owner at a time, like any value.
struct host_tensor {
  dtype type = dtype::uint8;
  int channels = 0;
  int height = 0;
  int width = 0;
  tensor_bytes bytes;  ///< size() == element_count() * size_of(type)

  /// A zero-filled tensor of the given shape.
  static host_tensor zeros(dtype t, int c, int h, int w) {
    host_tensor out = uninitialized(t, c, h, w);
    std::fill(out.bytes.begin(), out.bytes.end(), std::uint8_t{0});
    return out;
  }

  /// A tensor of the given shape whose elements the caller writes, every one of them.
  static host_tensor uninitialized(dtype t, int c, int h, int w) {
    host_tensor out{t, c, h, w, {}};
    out.bytes.resize(out.element_count() * size_of(t));
    return out;
  }

  std::size_t element_count() const noexcept {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(height) *
           static_cast<std::size_t>(width);
  }

  /// Precondition: T matches `type`. operator new aligns `bytes` for any scalar type.
  template <class T>
  T* data() noexcept {
    assert(dtype_of<T>() == type);
    return reinterpret_cast<T*>(bytes.data());
  }
  template <class T>
  const T* data() const noexcept {
    assert(dtype_of<T>() == type);
    return reinterpret_cast<const T*>(bytes.data());
  }
};

}  // namespace conveyor
