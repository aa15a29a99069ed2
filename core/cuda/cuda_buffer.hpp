#pragma once
/// Owned CUDA memory: page-locked (pinned) host memory, which the copy engines read without a
/// bounce buffer, and device memory. No CUDA header needed to hold either.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "conveyor/error.hpp"

namespace conveyor::cuda {

enum class memory_kind : std::uint8_t { pinned_host, device };

/// Frees `Kind` memory of `device` (cuda_buffer's deleter).
template <memory_kind Kind>
struct memory_releaser {
  int device = -1;
  void operator()(std::uint8_t* memory) const noexcept;
};

/// `size()` bytes of `Kind` memory for `device()`, freed with the owner. Move-only; the bytes
/// are the caller's to synchronise (CUDA copies and kernels read and write them
/// asynchronously). Empty (data() == nullptr) when default-made, moved from, or of 0 bytes.
template <memory_kind Kind>
class cuda_buffer {
 public:
  /// Allocates `bytes` (uninitialised); the error names the device, the call and the size.
  static expected<cuda_buffer> allocate(int device, std::size_t bytes);

  cuda_buffer() = default;
  std::uint8_t* data() const noexcept { return memory_.get(); }
  std::size_t size() const noexcept { return memory_ ? size_ : 0; }
  int device() const noexcept { return memory_.get_deleter().device; }

 private:
  cuda_buffer(std::uint8_t* memory, std::size_t size, int device)
      : memory_(memory, memory_releaser<Kind>{device}), size_(size) {}
  std::unique_ptr<std::uint8_t, memory_releaser<Kind>> memory_;
  std::size_t size_ = 0;
};

/// Host memory the GPU's copy engines read directly (cudaHostAlloc, portable).
using pinned_buffer = cuda_buffer<memory_kind::pinned_host>;
/// Device memory (cudaMalloc).
using device_buffer = cuda_buffer<memory_kind::device>;

}  // namespace conveyor::cuda
