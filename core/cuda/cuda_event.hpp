#pragma once
/// An owned CUDA event of one device: records a point in a stream and says when the work
/// before it has completed. No CUDA header needed to hold one.

#include <memory>

#include "conveyor/error.hpp"
#include "core/cuda/cuda_stream.hpp"

struct CUevent_st;  // cudaEvent_t is CUevent_st*

namespace conveyor::cuda {

/// Destroys an event of `device` (cuda_event's deleter).
struct event_destroyer {
  int device = -1;
  void operator()(CUevent_st* event) const noexcept;
};

/// Move-only. As CUDA's events: record and query may come from different threads, but one
/// owner should sequence re-recording against its readers.
class cuda_event {
 public:
  enum class timing : bool { off = false, on = true };
  /// How synchronize() waits: spinning on a core (CUDA's default: the soonest return), or
  /// asleep (cudaEventBlockingSync), leaving the core to other threads meanwhile.
  enum class waiting : bool { spin = false, sleep = true };

  /// An event on `device`; with timing::on it can measure elapsed time (and costs more).
  static expected<cuda_event> create(int device, timing t = timing::off, waiting w = waiting::spin);

  cuda_event() = default;
  CUevent_st* get() const noexcept { return event_.get(); }
  int device() const noexcept { return event_.get_deleter().device; }

  /// Captures the work queued on `stream` so far.
  expected<void> record(const cuda_stream& stream);
  /// True when the recorded work has completed (also for an event never recorded).
  expected<bool> ready() const;
  /// Blocks until the recorded work has completed.
  expected<void> synchronize() const;
  /// Milliseconds from `start` to `end`, both recorded with timing::on and completed.
  static expected<float> elapsed_ms(const cuda_event& start, const cuda_event& end);

 private:
  cuda_event(CUevent_st* event, int device) : event_(event, event_destroyer{device}) {}
  std::unique_ptr<CUevent_st, event_destroyer> event_;
};

}  // namespace conveyor::cuda
