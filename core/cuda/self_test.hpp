#pragma once
/// A kernel round trip on one device: proves the toolchain, driver and device work together.

#include <cstdint>

#include "conveyor/error.hpp"

namespace conveyor::cuda {

/// Fills `n` device integers with i * 3 + 1 in a kernel, copies them back and checks them.
/// Returns the number of elements checked. Must run on a thread that may use `device`.
expected<std::int64_t> kernel_round_trip(int device, std::int64_t n);

}  // namespace conveyor::cuda
