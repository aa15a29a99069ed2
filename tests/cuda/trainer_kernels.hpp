#pragma once
/// Kernels a simulated trainer queues in the CUDA tests: one that runs late (it spins for a
/// while, as a long training step does) and one that faults (a sticky error, as a trainer's
/// out-of-bounds access makes).

#include <cuda_runtime.h>

#include <chrono>

namespace conveyor::cuda::testing {

/// Queues a one-thread kernel on `stream` that spins for `duration` (the GPU's global timer).
cudaError_t launch_spin(cudaStream_t stream, std::chrono::nanoseconds duration);
/// Queues a one-thread kernel on `stream` that runs until the host sets `*flag` (device address
/// of mapped pinned memory; at most a minute): work behind it waits for the test.
cudaError_t launch_wait_for_host(cudaStream_t stream, const volatile int* flag);
/// Queues a kernel on `stream` that traps: the context is unusable afterwards (every later call
/// of the process on that device fails with the sticky error).
cudaError_t launch_trap(cudaStream_t stream);

}  // namespace conveyor::cuda::testing
