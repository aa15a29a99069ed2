#pragma once
/// Makes a CUDA device current for a scope and gives the thread back exactly the context it had
/// (none, on a fresh thread: restoring "device 0" there would create device 0's context in a
/// process that uses only another GPU). CUDA's current context is per host thread: a guard
/// belongs to the thread that made it.

#include <optional>

#include "conveyor/error.hpp"

namespace conveyor::cuda {

/// Move-only; not thread-safe (one thread's current context).
class device_guard {
 public:
  /// Sets `device` current on the calling thread. A device this process does not have is
  /// refused before CUDA is asked (no API error for a sanitizer to report); errors name the
  /// device and the call.
  static expected<device_guard> enter(int device);

  device_guard(device_guard&& other) noexcept;
  device_guard& operator=(device_guard&&) = delete;
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  ~device_guard();

 private:
  device_guard(void* context, int device) : previous_context_(context), previous_device_(device) {}
  void* previous_context_;  ///< the driver's CUcontext current before, null for none
  int previous_device_;     ///< without the driver's context calls: the runtime's device
  bool active_ = true;      ///< false once moved from
};

/// For destructors: `device` made current for the release of something of it (a buffer, an
/// event, a stream), so that a thread with no context (the teardown thread) neither creates
/// device 0's nor frees in the wrong one. Nullopt (logged) when it cannot be made current: the
/// release is then tried as it is.
std::optional<device_guard> enter_for_release(int device) noexcept;

/// Whether the calling thread has a CUDA context current (it has used CUDA); false where the
/// driver cannot tell. Creates nothing.
bool thread_has_context() noexcept;

}  // namespace conveyor::cuda
