#include "core/cuda/cuda_stream.hpp"

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/device_guard.hpp"

namespace conveyor::cuda {

expected<cuda_stream> cuda_stream::create(int device) {
  auto guard = device_guard::enter(device);
  if (!guard) {
    return std::move(guard).error();
  }
  cudaStream_t stream = nullptr;
  CONVEYOR_CUDA_TRY(device, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return cuda_stream(stream, device);
}

expected<void> cuda_stream::synchronize() const {
  return cuda_check(cudaStreamSynchronize(get()), "cudaStreamSynchronize", device());
}

void stream_destroyer::operator()(CUstream_st* stream) const noexcept {
  auto guard = enter_for_release(device);
  // cudaStreamDestroy returns at once and frees the stream when its work is done.
  log_failure(cudaStreamDestroy(stream), "cudaStreamDestroy", device);
}

}  // namespace conveyor::cuda
