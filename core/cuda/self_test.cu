#include "core/cuda/self_test.hpp"

#include <vector>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/device_query.hpp"

namespace conveyor::cuda {
namespace {

__global__ void fill_kernel(std::int32_t* out, std::int64_t n) {
  auto i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = static_cast<std::int32_t>(i * 3 + 1);
  }
}

}  // namespace

expected<std::int64_t> kernel_round_trip(int device, std::int64_t n) {
  if (auto ok = check_device(device, "cudaSetDevice"); !ok) {
    return std::move(ok).error();
  }
  CONVEYOR_CUDA_TRY(device, cudaSetDevice(device));
  std::int32_t* d = nullptr;
  CONVEYOR_CUDA_TRY(device, cudaMalloc(&d, static_cast<std::size_t>(n) * sizeof(std::int32_t)));
  constexpr int threads = 256;
  auto blocks = static_cast<unsigned>((n + threads - 1) / threads);
  std::int32_t* out = d;
  void* args[] = {&out, &n};
  auto launch = cudaLaunchKernel(reinterpret_cast<const void*>(&fill_kernel), dim3(blocks),
                                 dim3(threads), args, 0, nullptr);
  std::vector<std::int32_t> host(static_cast<std::size_t>(n));
  auto copy =
      cudaMemcpy(host.data(), d, host.size() * sizeof(std::int32_t), cudaMemcpyDeviceToHost);
  cudaFree(d);
  CONVEYOR_CUDA_TRY(device, launch);
  CONVEYOR_CUDA_TRY(device, copy);
  for (std::int64_t i = 0; i < n; ++i) {
    if (host[static_cast<std::size_t>(i)] != i * 3 + 1) {
      return error{errc::io_error, "CUDA device " + std::to_string(device) +
                                       ": kernel result wrong at element " + std::to_string(i)};
    }
  }
  return n;
}

}  // namespace conveyor::cuda
