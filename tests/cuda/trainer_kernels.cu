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

// Spins until the host sets *flag (mapped pinned memory), or a minute passes.
__global__ void wait_for_host_kernel(const volatile int* flag) {
  const auto start = global_ns();
  while (*flag == 0 && global_ns() - start < 60ull * 1000 * 1000 * 1000) {
  }
}

__global__ void trap_kernel() {
  __trap();
}

}  // namespace

// cudaLaunchKernel returns the launch's own status; cudaGetLastError after <<<>>> could return
// an earlier call's cudaErrorNotReady (the kit's stream queries).
cudaError_t launch_spin(cudaStream_t stream, std::chrono::nanoseconds duration) {
  auto ns = static_cast<unsigned long long>(duration.count());
  void* args[] = {&ns};
  return cudaLaunchKernel(reinterpret_cast<const void*>(&spin_kernel), dim3(1), dim3(1), args, 0,
                          stream);
}

cudaError_t launch_wait_for_host(cudaStream_t stream, const volatile int* flag) {
  void* args[] = {&flag};
  return cudaLaunchKernel(reinterpret_cast<const void*>(&wait_for_host_kernel), dim3(1), dim3(1),
                          args, 0, stream);
}

cudaError_t launch_trap(cudaStream_t stream) {
  return cudaLaunchKernel(reinterpret_cast<const void*>(&trap_kernel), dim3(1), dim3(1), nullptr, 0,
                          stream);
}

}  // namespace conveyor::cuda::testing
