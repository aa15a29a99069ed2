#pragma once
/// Normalisation parameters shared by the CPU and CUDA normalisation tests.

#include "core/transforms/transform_spec.hpp"

namespace conveyor::testing {

/// Means and deviations unlike ImageNet's, one of them negative: a mixed-up channel or sign
/// shows.
inline normalize_spec unusual_normalize_spec() {
  normalize_spec spec;
  spec.mean = {0.5, 0.25, -0.1};
  spec.stddev = {0.5, 2.0, -1.0};
  return spec;
}

}  // namespace conveyor::testing
