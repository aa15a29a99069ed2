#include "core/cuda/cuda_event.hpp"

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/device_guard.hpp"

namespace conveyor::cuda {

expected<cuda_event> cuda_event::create(int device, timing t, waiting w) {
  auto guard = device_guard::enter(device);
  if (!guard) {
    return std::move(guard).error();
  }
  cudaEvent_t event = nullptr;
  unsigned flags = t == timing::on ? cudaEventDefault : cudaEventDisableTiming;
  if (w == waiting::sleep) {
    flags |= cudaEventBlockingSync;
  }
  CONVEYOR_CUDA_TRY(device, cudaEventCreateWithFlags(&event, flags));
  return cuda_event(event, device);
}

expected<void> cuda_event::record(const cuda_stream& stream) {
  return cuda_check(cudaEventRecord(get(), stream.get()), "cudaEventRecord", device());
}

expected<bool> cuda_event::ready() const {
  auto status = cudaEventQuery(get());
  if (status == cudaErrorNotReady) {
    return false;
  }
  if (auto ok = cuda_check(status, "cudaEventQuery", device()); !ok) {
    return std::move(ok).error();
  }
  return true;
}

expected<void> cuda_event::synchronize() const {
  return cuda_check(cudaEventSynchronize(get()), "cudaEventSynchronize", device());
}

expected<float> cuda_event::elapsed_ms(const cuda_event& start, const cuda_event& end) {
  float ms = 0.0f;
  CONVEYOR_CUDA_TRY(start.device(), cudaEventElapsedTime(&ms, start.get(), end.get()));
  return ms;
}

void event_destroyer::operator()(CUevent_st* event) const noexcept {
  auto guard = enter_for_release(device);
  log_failure(cudaEventDestroy(event), "cudaEventDestroy", device);
}

}  // namespace conveyor::cuda
