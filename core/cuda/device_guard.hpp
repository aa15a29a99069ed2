#pragma once
/// Makes a CUDA device current for a scope and restores the previous one on exit. CUDA's
/// current device is per host thread: a guard belongs to the thread that made it.

#include "conveyor/error.hpp"

namespace conveyor::cuda {

/// Move-only; not thread-safe (one thread's current device).
class device_guard {
 public:
  /// Sets `device` current on the calling thread. The error names the device and the call.
  static expected<device_guard> enter(int device);

  device_guard(device_guard&& other) noexcept;
  device_guard& operator=(device_guard&&) = delete;
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  ~device_guard();

 private:
  explicit device_guard(int previous) : previous_(previous) {}
  int previous_;  ///< -1: nothing to restore (moved from)
};

}  // namespace conveyor::cuda
