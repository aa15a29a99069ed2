#pragma once
/// Normalisation of a uint8 batch on the GPU: CHW or HWC uint8 in, NCHW float32 or bfloat16
/// out, element for element the arithmetic of the CPU normalize step
/// (core/transforms/normalize_math.hpp; core/transforms/normalize_batch.hpp is the CPU reference).

#include <cstdint>

#include "conveyor/error.hpp"
#include "core/base/tensor.hpp"
#include "core/cuda/cuda_stream.hpp"
#include "core/transforms/normalize_math.hpp"

namespace conveyor::cuda {

/// Queues the kernel on `stream`: reads shape.elements() bytes at device address `src`, writes
/// as many `out` elements (float32, or bfloat16) at device address `dst`. Returns once
/// launched; `src` and `dst` must stay valid until the stream has passed the kernel. Makes the
/// stream's device current for the launch. errc::invalid_argument for a shape or type that
/// check_normalize_batch refuses; the launch error names the device.
expected<void> launch_normalize(const std::uint8_t* src, const uint8_batch_shape& shape,
                                const normalize_coefficients& k, dtype out, void* dst,
                                const cuda_stream& stream);

}  // namespace conveyor::cuda
