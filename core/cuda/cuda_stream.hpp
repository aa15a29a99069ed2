#pragma once
/// An owned CUDA stream of one device. No CUDA header needed to hold one.

#include <memory>

#include "conveyor/error.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace conveyor::cuda {

/// Destroys a stream of `device` (cuda_stream's deleter).
struct stream_destroyer {
  int device = -1;
  void operator()(CUstream_st* stream) const noexcept;
};

/// Move-only. The stream is destroyed (after its work completes) with its owner. Calls from
/// several threads are safe as CUDA's are, but the device must be made current by the caller
/// where CUDA asks for it (kernel launches).
class cuda_stream {
 public:
  /// A non-blocking stream (it does not synchronise with the legacy default stream) on
  /// `device`.
  static expected<cuda_stream> create(int device);

  cuda_stream() = default;
  CUstream_st* get() const noexcept { return stream_.get(); }
  int device() const noexcept { return stream_.get_deleter().device; }
  /// Blocks until all work queued so far has completed.
  expected<void> synchronize() const;

 private:
  cuda_stream(CUstream_st* stream, int device) : stream_(stream, stream_destroyer{device}) {}
  std::unique_ptr<CUstream_st, stream_destroyer> stream_;
};

}  // namespace conveyor::cuda
