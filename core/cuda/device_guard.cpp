#include "core/cuda/device_guard.hpp"

#include <cuda.h>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/device_query.hpp"

namespace conveyor::cuda {
namespace {

/// The driver's cuCtxGetCurrent and cuCtxSetCurrent, reached through the runtime (nothing
/// links libcuda itself); null where the driver does not give them.
struct context_calls {
  CUresult (*get)(CUcontext*) = nullptr;
  CUresult (*set)(CUcontext) = nullptr;
};

template <class Fn>
Fn driver_entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, 4000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();  // not sticky: leave no error behind for a later launch check
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

const context_calls* driver_context_calls() {
  static const context_calls calls{driver_entry<CUresult (*)(CUcontext*)>("cuCtxGetCurrent"),
                                   driver_entry<CUresult (*)(CUcontext)>("cuCtxSetCurrent")};
  return calls.get != nullptr && calls.set != nullptr ? &calls : nullptr;
}

}  // namespace

std::optional<device_guard> enter_for_release(int device) noexcept {
  try {
    auto guard = device_guard::enter(device);
    if (guard) {
      return std::move(*guard);
    }
    log("cuda")->warn("{} (releasing its resources without it current)", guard.error().what());
  } catch (...) {  // NOLINT(bugprone-empty-catch): a failed log line must not end the process
  }
  return std::nullopt;
}

bool thread_has_context() noexcept {
  const auto* calls = driver_context_calls();
  CUcontext current = nullptr;
  return calls != nullptr && calls->get(&current) == CUDA_SUCCESS && current != nullptr;
}

expected<device_guard> device_guard::enter(int device) {
  if (auto ok = check_device(device, "cudaSetDevice"); !ok) {
    return std::move(ok).error();
  }
  const auto* calls = driver_context_calls();
  CUcontext previous = nullptr;
  int previous_device = -1;
  if (calls != nullptr) {
    if (calls->get(&previous) != CUDA_SUCCESS) {
      previous = nullptr;
    }
  } else {
    CONVEYOR_CUDA_TRY(device, cudaGetDevice(&previous_device));
  }
  CONVEYOR_CUDA_TRY(device, cudaSetDevice(device));
  return device_guard(previous, previous_device);
}

device_guard::device_guard(device_guard&& other) noexcept
    : previous_context_(other.previous_context_),
      previous_device_(other.previous_device_),
      active_(other.active_) {
  other.active_ = false;
}

device_guard::~device_guard() {
  if (!active_) {
    return;
  }
  if (const auto* calls = driver_context_calls()) {
    CUcontext now = nullptr;
    if (calls->get(&now) != CUDA_SUCCESS || now != previous_context_) {
      auto restored = calls->set(static_cast<CUcontext>(previous_context_));
      if (restored != CUDA_SUCCESS) {
        log_failure(cudaErrorUnknown, "cuCtxSetCurrent (restoring the thread's context)", -1);
      }
    }
  } else if (previous_device_ >= 0) {
    log_failure(cudaSetDevice(previous_device_), "cudaSetDevice (restoring the previous device)",
                previous_device_);
  }
}

}  // namespace conveyor::cuda
