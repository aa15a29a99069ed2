#pragma once
/// The copy engine behind a ring of batch slots (slot_ring.hpp): what a feeder needs from the
/// device its batches go to. Memory, an in-order queue of copies and kernels, and events that
/// mark points in that queue or in a consumer's. Two implementations: the CUDA engine
/// (core/cuda/cuda_copy_engine.hpp: one stream of one device) and the host engine
/// (host_copy_engine.hpp: host memory and a thread, with injectable delays and faults), which
/// stands in where there is no GPU and lets the ring's protocol be tested on every machine.
///
/// The rules are CUDA's: work queued on the engine runs in order, asynchronously to the caller;
/// an event's query and waits concern its most recent record; after a fault the engine is in a
/// sticky error state, and every later queue call, query and wait returns that error.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "conveyor/error.hpp"
#include "core/base/tensor.hpp"
#include "core/delivery/slot_owner.hpp"
#include "core/transforms/normalize_math.hpp"

namespace conveyor {

/// What the host side of one batch holds: `bytes` bytes of its fields, in one buffer
/// (core/delivery/batch_blob.hpp). When the ring normalises on the device, `images` (samples >
/// 0) is the uint8 batch of images at `images_offset` in it that the engine normalises into the
/// slot's result buffer.
struct batch_layout {
  std::size_t bytes = 0;
  std::size_t images_offset = 0;
  uint8_batch_shape images;
};

/// Memory an engine allocated: `size` bytes at data(), freed with the last copy of `memory`.
struct engine_buffer {
  std::shared_ptr<std::uint8_t> memory;
  std::size_t size = 0;
  std::uint8_t* data() const noexcept { return memory.get(); }
};

/// An event of one engine (made by its create_event; only that engine may use it).
class engine_event {
 public:
  virtual ~engine_event() = default;
};

/// Thread-safe: the feeder queues work, a completion thread waits, trainers record their
/// releases, all on one engine at once.
class copy_engine {
 public:
  using clock = std::chrono::steady_clock;

  virtual ~copy_engine() = default;
  /// "CUDA device 0", "host engine": for messages.
  virtual std::string name() const = 0;
  /// The CUDA device whose memory batches end up in; -1 for host memory.
  virtual int device() const noexcept = 0;
  /// The device reads host memory where it is: the ring copies nothing, and a slot's host
  /// buffer is the batch the trainer reads (so it is written again only once released).
  virtual bool in_place() const noexcept = 0;

  /// Host memory that the engine's copies read fast (pinned); errors name the size.
  virtual expected<engine_buffer> allocate_host(std::size_t bytes) = 0;
  /// Memory of the device.
  virtual expected<engine_buffer> allocate_device(std::size_t bytes) = 0;
  virtual expected<std::unique_ptr<engine_event>> create_event() = 0;

  // The queue. Each call returns once the work is queued; an error means it could not be
  // (the engine is in a sticky error state, or the call was refused).

  /// Copies `bytes` from host memory at `src` to device memory at `dst`.
  virtual expected<void> copy_to_device(std::uint8_t* dst, const std::uint8_t* src,
                                        std::size_t bytes) = 0;
  /// Normalises the uint8 batch at device address `src` into `out` (float32 or bfloat16) at
  /// `dst`, as core/transforms/normalize_batch.hpp does on the CPU.
  virtual expected<void> normalize(const std::uint8_t* src, const uint8_batch_shape& shape,
                                   const normalize_coefficients& k, dtype out, void* dst) = 0;
  /// Later work waits until what `e` recorded (by this call) has completed, wherever it was
  /// recorded: the engine's queue or a consumer's stream.
  virtual expected<void> wait_for(const engine_event& e) = 0;
  /// Records `e` here: it completes when the work queued so far has.
  virtual expected<void> record(engine_event& e) = 0;
  /// Records `e` on a consumer's stream: it completes when the consumer's work queued so far
  /// has. Called on the consumer's thread; leaves that thread's device state as it was. The
  /// stream may be of another device (a peer reading the batch): `e` is recorded there, and
  /// wait_for and query follow it. Null: the default stream of the thread's current device.
  virtual expected<void> record_on(engine_event& e, consumer_stream stream) = 0;

  // The host side.

  /// True once what `e` recorded has completed (also for an event never recorded); the
  /// engine's sticky error, if any.
  virtual expected<bool> query(const engine_event& e) = 0;
  /// Waits until what `e` recorded has completed (true), `deadline` passes (false), or the
  /// engine fails (its error).
  virtual expected<bool> wait_until(const engine_event& e, clock::time_point deadline) = 0;
};

/// Waits until everything queued on `engine` so far has completed: true, false when `deadline`
/// passed first, or the engine's error.
expected<bool> drain(copy_engine& engine, copy_engine::clock::time_point deadline);

}  // namespace conveyor
