#include "trainer_kernels.hpp"

namespace conveyor::cuda::testing {
namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(unsigned long long ns) {
  const auto start = global_ns();
  while (global_ns() - start < ns) {
  }
}

__global__ void trap_kernel() {
  __trap();
}

}  // namespace

cudaError_t launch_spin(cudaStream_t stream, std::chrono::nanoseconds duration) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(duration.count()));
  return cudaGetLastError();
}

cudaError_t launch_trap(cudaStream_t stream) {
  trap_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace conveyor::cuda::testing
