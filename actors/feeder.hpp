#pragma once
/// The feeder of one GPU slot: an actor over a ring of batch slots (core/feeding/slot_ring.hpp)
/// and the copy engine of its device. Each plan from the batcher is collated, field by field
/// (core/delivery/batch_blob.hpp), into a free slot's host buffer and submitted: the engine copies
/// it to the device (after the trainer's release of that slot's previous batch), normalises it
/// there when configured, and the batch goes into the GPU's channel once it is complete. When the
/// trainer releases a batch, its slot returns to the ring and a credit (with the number of samples
/// that left the pipeline) goes back to the batcher. A fault or a stall of the device's work fails
/// the pipeline with an error naming the device and the batch.
///
/// Engines: the CUDA engine of a device (core/cuda/cuda_copy_engine.hpp); where there is no
/// GPU, the host engine, inline and in place (the trainer reads the slot the samples were
/// written into: one copy, as a plain host ring), or threaded, with injected faults (tests).

#include <caf/actor_system.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "actors/reporting.hpp"
#include "core/delivery/batch_channel.hpp"
#include "core/delivery/pipeline_status.hpp"
#include "core/feeding/copy_engine.hpp"
#include "messages/pipeline_actors.hpp"

namespace conveyor {

/// Makes the engine, on the feeder's thread; its error fails the pipeline.
using engine_factory = std::function<expected<std::shared_ptr<copy_engine>>()>;

struct feeder_options {
  std::int32_t gpu = 0;
  std::uint64_t slots = 3;  ///< prefetch_batches + 1
  batcher_actor batcher;
  std::shared_ptr<batch_channel> channel;
  std::shared_ptr<pipeline_status> status;
  reporting report;
  /// The batch's fields as the host buffer holds them (a field normalised at collate is
  /// float32 there), and the batch size the buffers are laid out for.
  std::shared_ptr<const sample_schema> schema;
  std::uint64_t batch_size = 1;
  /// When set (one buffer per slot), batches are written into this memory (a shared-memory
  /// feed) instead of the engine's host buffers.
  external_slots memory{};
  /// Unset: the host engine, inline and in place.
  engine_factory engine;
  /// The engine's calls may block (a CUDA device): the actor gets a thread of its own.
  bool own_thread = false;
  /// The field `normalize` and `collate_normalize` apply to: uint8 C x H x W images (the
  /// chain ends with to_uint8 on it).
  std::size_t normalize_field = 0;
  /// With a value, that field is normalised by the engine with these coefficients into
  /// `normalized_type` (float32 or bfloat16).
  std::optional<normalize_coefficients> normalize;
  dtype normalized_type = dtype::float32;
  /// With a value (and no `normalize`), that field is normalised to float32 with these
  /// coefficients as it is written into the slot: the chain's final normalize on the CPU,
  /// without a float tensor per sample to copy.
  std::optional<normalize_coefficients> collate_normalize;
  /// The bound of the device's work on a batch (pipeline.next_timeout_s).
  std::chrono::milliseconds device_timeout{std::chrono::seconds(300)};
};

/// Grants the batcher `slots` credits on start. If the engine cannot be set up (no driver, no
/// such device, out of memory), fails the pipeline through `status` with an error naming the
/// device and the call.
feeder_actor spawn_feeder(caf::actor_system& sys, feeder_options options);

}  // namespace conveyor
