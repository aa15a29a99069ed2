#include "core/cuda/device_guard.hpp"

#include "core/cuda/cuda_check.hpp"

namespace conveyor::cuda {

expected<device_guard> device_guard::enter(int device) {
  int previous = 0;
  CONVEYOR_CUDA_TRY(device, cudaGetDevice(&previous));
  CONVEYOR_CUDA_TRY(device, cudaSetDevice(device));
  return device_guard(previous);
}

device_guard::device_guard(device_guard&& other) noexcept : previous_(other.previous_) {
  other.previous_ = -1;
}

device_guard::~device_guard() {
  if (previous_ >= 0) {
    log_failure(cudaSetDevice(previous_), "cudaSetDevice (restoring the previous device)",
                previous_);
  }
}

}  // namespace conveyor::cuda
