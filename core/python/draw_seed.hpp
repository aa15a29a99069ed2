#pragma once
/// The seed a Python worker gives random, numpy.random and torch before dataset[index] in epoch
/// `epoch` of a run seeded `seed`: the first draw of the step's generator (step 0 of the chain,
/// core/transforms/transform_step.hpp's step_rng), so that a sample run anywhere else (a loader
/// that pads a rank's share, a test) gets the same draws as in a worker. Header-only: the
/// Python module has it without the transforms.

#include <cstdint>
#include <random>

#include "core/base/sample_seed.hpp"
#include "core/batching/epoch_order.hpp"

namespace conveyor {

inline std::uint64_t python_draw_seed(std::uint64_t seed, std::uint64_t epoch,
                                      std::uint64_t index) {
  std::mt19937_64 rng(step_seed(epoch_seed(seed, epoch), index, 0));
  return rng();
}

}  // namespace conveyor
