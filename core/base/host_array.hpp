#pragma once
/// A dense N-d array that owns its bytes: one field of a sample (an image's CHW pixels, a CT
/// volume, a spectrogram, the boxes of an image, a class id). Row-major (C order), rank 0 (a
/// scalar) to max_rank, any dtype. Plain value type; no OpenCV in this header.

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "conveyor/dtype.hpp"
#include "core/base/tensor.hpp"

namespace conveyor {

/// Not synchronised: one owner at a time, like any value.
struct host_array {
  /// The largest rank of one sample's field (a batch adds one dimension in front).
  static constexpr int max_rank = 4;
  using shape_type = std::array<std::int64_t, max_rank>;

  dtype type = dtype::uint8;
  int rank = 0;
  shape_type shape{};  ///< the first `rank` extents; the rest 0
  tensor_bytes bytes;  ///< size() == element_count() * size_of(type)

  /// An array of `extents` (at most max_rank of them, each >= 0) whose elements the caller
  /// writes, every one of them.
  static host_array uninitialized(dtype t, std::initializer_list<std::int64_t> extents) {
    return uninitialized(t, extents.begin(), extents.end());
  }
  template <class It>
  static host_array uninitialized(dtype t, It first, It last) {
    host_array out;
    out.type = t;
    for (auto it = first; it != last; ++it) {
      assert(out.rank < max_rank && *it >= 0);
      out.shape[static_cast<std::size_t>(out.rank++)] = static_cast<std::int64_t>(*it);
    }
    out.bytes.resize(out.element_count() * size_of(t));
    return out;
  }
  /// The same, zero-filled.
  static host_array zeros(dtype t, std::initializer_list<std::int64_t> extents) {
    auto out = uninitialized(t, extents);
    std::fill(out.bytes.begin(), out.bytes.end(), std::uint8_t{0});
    return out;
  }

  std::size_t element_count() const noexcept {
    std::size_t n = 1;
    for (int i = 0; i < rank; ++i) {
      n *= static_cast<std::size_t>(shape[static_cast<std::size_t>(i)]);
    }
    return n;
  }
  std::size_t byte_count() const noexcept { return bytes.size(); }
  /// Extent of axis `axis` (< rank).
  std::int64_t extent(int axis) const noexcept { return shape[static_cast<std::size_t>(axis)]; }

  /// Precondition: T's size matches `type`'s. operator new aligns `bytes` for any scalar type.
  template <class T>
  T* data() noexcept {
    assert(sizeof(T) == size_of(type));
    return reinterpret_cast<T*>(bytes.data());
  }
  template <class T>
  const T* data() const noexcept {
    assert(sizeof(T) == size_of(type));
    return reinterpret_cast<const T*>(bytes.data());
  }
};

/// "float32 [1, 128, 128, 128]": how messages name an array's type and shape.
inline std::string describe(const host_array& a) {
  std::string out(name_of(a.type));
  out += " [";
  for (int i = 0; i < a.rank; ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(a.extent(i));
  }
  return out + "]";
}

}  // namespace conveyor
