#pragma once
/// Where normalize runs: in the feeders, where the batch is assembled. The CPU chain ends with
/// to_uint8 instead of its final normalize (samples travel as uint8, a quarter of the bytes),
/// and the feeder runs that normalize: on the device with `on = "gpu"` and a CUDA feeder (after
/// the copy), otherwise on the CPU as it writes the samples into the batch
/// (api/resolve_topology.cpp).

#include <optional>
#include <vector>

#include "core/transforms/transform_spec.hpp"

namespace conveyor {

struct normalize_placement {
  std::vector<transform_spec> cpu_chain;    ///< what the preprocessors run
  std::optional<normalize_spec> in_feeder;  ///< what the feeder runs; nullopt: nothing
};

/// Moves the final normalize of `chain` to the feeder: cpu_chain is `chain` with its last step,
/// a normalize, replaced by a to_uint8 of the same field, and in_feeder is that normalize. A chain
/// that does not end with normalize is returned whole, with in_feeder empty. Pure.
normalize_placement move_normalize_to_feeder(std::vector<transform_spec> chain);

}  // namespace conveyor
