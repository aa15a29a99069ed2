#pragma once
/// The host feeder of one GPU slot: a ring of `slots` batch buffers in host memory. Each plan
/// from the batcher is collated into a free buffer and handed to the trainer through the
/// GPU's channel; when the trainer releases the buffer, it returns to the ring and a credit
/// (with the number of samples that left the pipeline) goes back to the batcher. It stands in
/// for the CUDA feeder where there is no GPU, with the same interface.

#include <caf/actor_system.hpp>

#include <memory>

#include "actors/reporting.hpp"
#include "core/delivery/batch_channel.hpp"
#include "core/delivery/pipeline_status.hpp"
#include "messages/pipeline_actors.hpp"

namespace conveyor {

struct feeder_options {
  std::int32_t gpu = 0;
  std::uint64_t slots = 3;  ///< prefetch_batches + 1
  batcher_actor batcher;
  std::shared_ptr<batch_channel> channel;
  std::shared_ptr<pipeline_status> status;
  reporting report;
  /// When set (one tensor per slot), batches are collated into this memory (a shared-memory
  /// feed) instead of the feeder's own buffers.
  external_slots memory{};
};

/// Grants the batcher `slots` credits on start.
feeder_actor spawn_host_feeder(caf::actor_system& sys, feeder_options options);

}  // namespace conveyor
