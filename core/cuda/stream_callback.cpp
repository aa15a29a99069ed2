#include "core/cuda/stream_callback.hpp"

#include <memory>

#include "core/cuda/cuda_check.hpp"

namespace conveyor::cuda {
namespace {

void CUDART_CB run_and_free(void* data) {
  std::unique_ptr<std::function<void()>> then(static_cast<std::function<void()>*>(data));
  (*then)();
}

}  // namespace

expected<bool> call_when_done(void* stream, std::function<void()> then) {
  if (stream == nullptr) {
    return false;
  }
  int device = -1;
  (void)cudaGetDevice(&device);  // for the message only
  auto owned = std::make_unique<std::function<void()>>(std::move(then));
  CONVEYOR_CUDA_TRY(
      device, cudaLaunchHostFunc(static_cast<cudaStream_t>(stream), &run_and_free, owned.get()));
  owned.release();  // run_and_free frees it
  return true;
}

}  // namespace conveyor::cuda
