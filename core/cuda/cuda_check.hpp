#pragma once
/// Turns a cudaError_t into a conveyor::error that names the device and the call.
/// Include only from .cpp/.cu files of core/cuda (it pulls in cuda_runtime.h).

#include <cuda_runtime.h>

#include <mutex>
#include <set>
#include <string>
#include <tuple>

#include "conveyor/error.hpp"
#include "core/base/log.hpp"

namespace conveyor::cuda {

/// "CUDA device <device>: <call> failed: <name> (<description>)".
inline std::string failure_text(cudaError_t status, const char* call, int device) {
  return "CUDA device " + std::to_string(device) + ": " + call +
         " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
}

inline expected<void> cuda_check(cudaError_t status, const char* call, int device) {
  if (status == cudaSuccess) {
    return {};
  }
  return error{errc::io_error, failure_text(status, call, device)};
}

/// True the first time `call` fails with `status` on `device` in this process.
inline bool first_failure(cudaError_t status, const char* call, int device) {
  static std::mutex mutex;
  static std::set<std::tuple<int, int, std::string>> seen;
  std::lock_guard<std::mutex> lock(mutex);
  return seen.emplace(device, static_cast<int>(status), call).second;
}

/// For destructors and other places that cannot return an error: logs a failed call, once per
/// call, device and error (after a fault CUDA's error is sticky: every event and buffer
/// destroyed afterwards fails the same way, and one line says so).
inline void log_failure(cudaError_t status, const char* call, int device) noexcept {
  if (status == cudaSuccess) {
    return;
  }
  try {
    if (!first_failure(status, call, device)) {
      return;
    }
    log("cuda")->error("{} (later failures of this call are not logged)",
                       failure_text(status, call, device));
  } catch (...) {  // NOLINT(bugprone-empty-catch): a failed log line must not end the process
  }
}

}  // namespace conveyor::cuda

/// Evaluates a CUDA call and returns its error from the enclosing function on failure.
#define CONVEYOR_CUDA_TRY(device, call)                                            \
  do {                                                                             \
    if (auto conveyor_ok_ = ::conveyor::cuda::cuda_check((call), #call, (device)); \
        !conveyor_ok_) {                                                           \
      return std::move(conveyor_ok_).error();                                      \
    }                                                                              \
  } while (false)
