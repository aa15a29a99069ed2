#pragma once
/// Where normalize runs. With `on = "gpu"` and a CUDA feeder, the CPU chain ends with to_uint8
/// instead of its final normalize (samples cross PCIe as uint8, a quarter of the bytes), and
/// the feeder runs that normalize on the device; without a CUDA feeder the chain stays as it is.

#include <optional>
#include <vector>

#include "core/transforms/transform_spec.hpp"

namespace conveyor {

struct normalize_placement {
  std::vector<transform_spec> cpu_chain;  ///< what the preprocessors run
  std::optional<normalize_spec> on_gpu;   ///< what the feeder runs; nullopt: nothing
};

/// Moves the final normalize of `chain` to the GPU: cpu_chain is `chain` with its last step, a
/// normalize, replaced by to_uint8, and on_gpu is that normalize. A chain that does not end with
/// normalize is returned whole, with on_gpu empty. Pure.
normalize_placement move_normalize_to_gpu(std::vector<transform_spec> chain);

}  // namespace conveyor
