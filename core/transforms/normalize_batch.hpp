#pragma once
/// Normalisation of a whole uint8 batch on the CPU: the reference the CUDA kernel is checked
/// against, and what a host feeder runs when normalize is configured `on = "gpu"` but no GPU is
/// there. Element for element the same arithmetic as the normalize step
/// (core/transforms/normalize_math.hpp).

#include "conveyor/error.hpp"
#include "core/base/tensor.hpp"
#include "core/transforms/normalize_math.hpp"

namespace conveyor {

/// Whether a batch of `shape` can be normalised into `out`: 3 channels, non-negative sizes,
/// float32 or bfloat16 output. errc::invalid_argument says what is wrong.
expected<void> check_normalize_batch(const uint8_batch_shape& shape, dtype out);

/// Writes shape.elements() values of `out` (float32, or bfloat16 as uint16 bits) to `dst`, NCHW,
/// from the uint8 batch at `src`. Thread-safe (touches only its arguments); buffers must not
/// overlap.
expected<void> normalize_batch(const std::uint8_t* src, const uint8_batch_shape& shape,
                               const normalize_coefficients& k, dtype out, void* dst);

}  // namespace conveyor
