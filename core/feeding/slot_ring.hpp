#pragma once
/// A feeder's ring of batch slots over a copy engine (copy_engine.hpp), with no actors in it.
/// Each slot has a host buffer that samples are written into in place, device buffers, and
/// three events: `copied` (the host buffer has been read), `done` (the batch is complete on the
/// device) and `released` (recorded on the trainer's stream when it releases the batch).
///
///   auto slot = ring->acquire(layout, "batch 3 of epoch 1");   // a free slot, sized for it
///   collate_batch(plan, schema, fields, slot->host());   // the fields, in their places
///   ring->submit(*slot, on_ready);                   // copy (+ normalize), async
///   ... on_ready runs once complete: the trainer reads slot->output() ...
///   ring->released(index, trainer_stream);           // trainer thread: done after its work
///   ring->reclaim(index);                            // feeder thread: back to the ring
///
/// The protocol, which holds whatever the engine:
/// - Reuse never overtakes the trainer: a slot's device memory is written again only after the
///   `released` event, queued on the engine before the next copy into it (with an in-place
///   engine, acquire waits for it on the host, within the deadline).
/// - A handed-out batch owns its memory: the ring is shared (shared_ptr, the batch's
///   slot_owner), and its buffers are freed only when the last batch and the feeder have let
///   go, after the trainer's recorded work and the engine's queue have completed: in the
///   background (deferred_teardown.hpp), so that the trainer dropping the last batch never
///   waits. If that work does not complete within the deadline, the buffers are leaked rather
///   than freed under running work. A slot's device memory that grows for a larger batch is
///   freed the same way: after the trainer's work on the slot's last batch.
/// - Faults surface: every batch's completion is polled with a deadline (completion_queue);
///   an engine fault (also one of the trainer's own work, which CUDA makes sticky for the
///   whole device), or a stall, calls on_failure with an error naming the ring, the engine,
///   the failed call and the batch, once, and nothing more is delivered. No call waits past
///   the deadline.

#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/delivery/host_batch.hpp"
#include "core/feeding/completion_queue.hpp"
#include "core/feeding/copy_engine.hpp"

namespace conveyor {

struct ring_options {
  std::string name = "feeder";  ///< for messages: "feeder 0"
  std::size_t slots = 3;        ///< pipeline.prefetch_batches + 1
  /// With a value, each batch's images (batch_layout::images) leave normalised on the engine
  /// with these coefficients as `normalized_type` (float32 or bfloat16); without, bytes pass
  /// as they are.
  std::optional<normalize_coefficients> normalize;
  dtype normalized_type = dtype::float32;
  /// The bound of every wait: a batch's device work from its submission, the trainer's work
  /// on a slot before it is written again on the host, and both at teardown.
  std::chrono::milliseconds deadline{std::chrono::seconds(30)};
  /// When set (one buffer per slot), slot i's host buffer is buffers[i] (shared memory that a
  /// node's clients map) instead of the engine's memory.
  external_slots host_memory;
  /// The ring failed (an engine fault, a stall, a release that could not be ordered): called
  /// once, from the thread that found it. Dropped by stop().
  std::function<void(const error&)> on_failure;
};

/// Where the batch of a slot lies for the trainer: its buffer (the host buffer read in place,
/// or its copy on the device), and the normalised images when the ring normalises.
struct slot_output {
  std::uint8_t* data = nullptr;  ///< null for an empty batch
  void* normalized = nullptr;    ///< ring_options::normalize: the images, as normalized_type
  dtype normalized_type = dtype::float32;
  int device = -1;  ///< -1: host memory
};

/// One slot of the ring, owned by it. Its user writes samples between acquire and submit and
/// reads output() once the slot's batch is handed over.
class ring_slot {
 public:
  std::size_t index() const noexcept { return index_; }
  const batch_layout& layout() const noexcept { return layout_; }
  /// The host buffer the batch is written into, layout().bytes long.
  std::uint8_t* host() noexcept { return host_data_; }
  slot_output output() const noexcept { return output_; }

 private:
  friend class slot_ring;
  enum class state : std::uint8_t { free, writing, in_use };

  std::size_t index_ = 0;
  state state_ = state::free;
  std::string what_;  ///< the batch it holds, for failures: "batch 3 of epoch 1 (slot 2)"
  batch_layout layout_;
  slot_output output_;
  std::uint8_t* host_data_ = nullptr;  ///< host_ or the external slot
  engine_buffer host_;
  engine_buffer input_;   ///< the copy's destination (unused in place)
  engine_buffer result_;  ///< normalize's output
  std::unique_ptr<engine_event> copied_;
  std::unique_ptr<engine_event> done_;
  std::unique_ptr<engine_event> released_;
  /// The trainer recorded `released_`: the slot's memory is not written before it completes.
  std::atomic<bool> consumer_pending_{false};
  /// The release could not be recorded: the slot's memory is never written again.
  std::atomic<bool> poisoned_{false};
};

/// acquire, submit and reclaim come from one thread (the feeder's); released from any trainer
/// thread; the rest of the ring works on the completion thread.
class slot_ring final : public slot_owner {
 public:
  /// Makes the slots' events; buffers come with the first acquire (when the batch size is
  /// known). errc::invalid_argument for 0 slots, a normalized_type other than float32 or
  /// bfloat16, or external memory for another number of slots; the engine's errors.
  static expected<std::shared_ptr<slot_ring>> create(std::shared_ptr<copy_engine> engine,
                                                     ring_options options);
  /// Frees the buffers once the trainers' recorded work and the engine's queue have completed:
  /// at once when they have, else in the background (deferred_teardown.hpp); never waits.
  /// Leaks them, with an error in the log, if that work does not complete within the deadline.
  ~slot_ring() override;
  slot_ring(const slot_ring&) = delete;
  slot_ring& operator=(const slot_ring&) = delete;

  /// A free slot for the batch `what` ("batch 3 of epoch 1": every failure from here on names
  /// it, and the slot), its buffers grown to hold `layout` (they never shrink; device memory
  /// that grows is freed after the trainer's work on it, waited for within the deadline): the
  /// one released longest ago, or, with an in-place engine, the one released last (its memory
  /// is warm). errc::invalid_argument when no slot is free (a batch without a credit) or the
  /// layout does not suit the options; errc::invalid_config when it does not fit an external
  /// slot; the engine's errors (errc::device_error); errc::timed_out when the trainer's work on
  /// the slot does not complete within the deadline.
  expected<ring_slot*> acquire(const batch_layout& layout, const std::string& what);
  /// Queues the slot's copy (after the trainer's release of its previous batch), normalize if
  /// configured, and its completion: `on_ready` runs once the batch is complete on the device,
  /// in submission order, on this thread or the completion thread; it must be quick. The
  /// slot's samples must all be written.
  expected<void> submit(ring_slot& slot, std::function<void()> on_ready);
  /// slot_owner: records the slot's `released` event on the trainer's stream. A failure to
  /// record it poisons the slot (never reused) and fails the ring, naming the batch.
  void released(std::uint64_t slot, consumer_stream stream) noexcept override;
  /// Returns slot `index`, handed out and released, to the ring. errc::invalid_argument for a
  /// slot that is not in use, or poisoned.
  expected<void> reclaim(std::size_t index);
  /// The feeder is gone: stops the completion thread, drops undelivered batches and the
  /// failure handler. Held batches stay readable. Idempotent.
  void stop();

  std::size_t slots() const noexcept { return slots_.size(); }
  std::size_t free_slots() const noexcept { return free_.size(); }
  ring_slot& slot(std::size_t index) noexcept { return *slots_[index]; }
  copy_engine& engine() noexcept { return *engine_; }
  const ring_options& options() const noexcept { return options_; }

 private:
  slot_ring(std::shared_ptr<copy_engine> engine, ring_options options);
  expected<void> check(const batch_layout& layout) const;
  enum class memory_kind : bool { host, device };
  /// The engine's memory (acquire names the ring and the batch in its errors).
  expected<engine_buffer> allocate(memory_kind kind, std::size_t bytes);
  expected<void> reserve(ring_slot& slot, const batch_layout& layout);
  expected<void> retire_device_memory(ring_slot& slot, const batch_layout& layout);
  expected<void> reusable(ring_slot& slot);
  expected<void> enqueue_work(ring_slot& slot);
  slot_output output_of(const ring_slot& slot) const;
  error failure(const std::string& what, const error& why) const;
  void fail(const error& why);
  void tear_down();

  std::shared_ptr<copy_engine> engine_;  // first member: it outlives the buffers and events
  ring_options options_;
  std::vector<std::unique_ptr<ring_slot>> slots_;
  std::deque<std::size_t> free_;  ///< in order of release
  std::mutex failure_mutex_;
  completion_queue completions_;
};

}  // namespace conveyor
