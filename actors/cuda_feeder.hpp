#pragma once
/// The CUDA feeder of one GPU: a detached actor (CUDA's current device is per thread, and it
/// may block on an event) that owns a core/cuda/device_feeder. Each plan from the batcher is
/// written, sample by sample, into a free pinned slot, copied to the device with one
/// asynchronous copy (then normalised there when configured), and handed to the trainer
/// through the GPU's channel once it is complete on the device. When the trainer releases
/// the batch, its slot returns to the ring and a credit (with the number of samples that left
/// the pipeline) goes back to the batcher. Same interface as the host feeder (actors/feeder.hpp).
/// Built only with the CUDA parts (CONVEYOR_HAVE_CUDA).

#include <caf/actor_system.hpp>

#include <optional>

#include "actors/feeder.hpp"
#include "core/base/tensor.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor {

struct cuda_feeder_options {
  /// As for the host feeder; feeder.gpu is the pipeline's GPU index (channel and credits),
  /// feeder.slots the ring's size (prefetch_batches + 1).
  feeder_options feeder;
  int device = 0;  ///< the CUDA device id
  /// With a value, samples arrive as uint8 (to_uint8) and are normalised on the GPU with these
  /// parameters into `normalized_type` (float32 or bfloat16); without, they are copied as they
  /// are.
  std::optional<normalize_spec> normalize;
  dtype normalized_type = dtype::float32;
};

/// Grants the batcher `feeder.slots` credits on start. If CUDA cannot set up the device (no
/// driver, no such device, out of memory), fails the pipeline through feeder.status with an
/// error naming the device and the call.
feeder_actor spawn_cuda_feeder(caf::actor_system& sys, cuda_feeder_options options);

}  // namespace conveyor
