#pragma once
/// What owns the memory of a batch that lies in a ring of slots (core/feeding/slot_ring.hpp):
/// a batch keeps its owner alive, so its memory stays readable while the trainer holds it, also
/// after the pipeline is shut down, and tells it when the trainer is done with the batch, in
/// the order of the trainer's own device work.

#include <cstdint>

namespace conveyor {

/// A consumer's queue of device work, as the copy engine of the slot's ring understands it:
/// for the CUDA engine a cudaStream_t (null: the legacy default stream), for the host engine a
/// host_stream* (null: the consumer's work is done when it releases).
struct consumer_stream {
  void* handle = nullptr;
};

class slot_owner {
 public:
  virtual ~slot_owner() = default;
  /// The trainer is done with slot `slot` once the work queued on `stream` so far completes:
  /// the slot's memory is not written again before that. Called once per hand-out, by the
  /// release of the batch, on the releasing thread, before the feeder hears of it. Never
  /// blocks on device work; failures are reported through the owner's failure path.
  virtual void released(std::uint64_t slot, consumer_stream stream) noexcept = 0;
};

}  // namespace conveyor
