#include "core/cuda/normalize_kernel.hpp"

#include <algorithm>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/device_guard.hpp"
#include "core/transforms/normalize_batch.hpp"

namespace conveyor::cuda {
namespace {

constexpr unsigned threads_per_block = 256;
constexpr unsigned max_grid_y = 65535;  // CUDA's limit on gridDim.y
constexpr unsigned max_grid_x = 4096;   // enough blocks to fill any GPU; loops cover the rest

/// Grid y walks the output planes (sample n, channel c), grid x the pixels of a plane: the
/// channel is uniform across a block and output writes are coalesced.
template <class Out>
__global__ void normalize_kernel(const std::uint8_t* src, uint8_batch_shape shape,
                                 normalize_coefficients k, Out* dst) {
  const auto planes = static_cast<unsigned>(shape.samples * shape.channels);
  const std::size_t pixels = shape.pixels();
  for (unsigned plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    const int n = static_cast<int>(plane) / shape.channels;
    const int c = static_cast<int>(plane) % shape.channels;
    for (std::size_t p = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         p < pixels; p += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
      store_normalized(dst + output_offset(shape, n, c, p),
                       normalize_value(src[input_offset(shape, n, c, p)], k, c));
    }
  }
}

/// The launch's own status (cudaLaunchKernel's): cudaGetLastError after <<<>>> could return an
/// error an earlier call of this thread left behind (a cudaErrorNotReady of an event query).
template <class Out>
cudaError_t launch(const std::uint8_t* src, uint8_batch_shape shape, normalize_coefficients k,
                   Out* dst, cudaStream_t stream) {
  const auto planes = static_cast<unsigned>(shape.samples * shape.channels);
  const auto blocks_x = static_cast<unsigned>(std::min<std::size_t>(
      (shape.pixels() + threads_per_block - 1) / threads_per_block, max_grid_x));
  dim3 grid(blocks_x, std::min(planes, max_grid_y));
  void* args[] = {&src, &shape, &k, &dst};
  return cudaLaunchKernel(reinterpret_cast<const void*>(&normalize_kernel<Out>), grid,
                          dim3(threads_per_block), args, 0, stream);
}

}  // namespace

expected<void> launch_normalize(const std::uint8_t* src, const uint8_batch_shape& shape,
                                const normalize_coefficients& k, dtype out, void* dst,
                                const cuda_stream& stream) {
  if (auto ok = check_normalize_batch(shape, out); !ok) {
    return ok;
  }
  if (shape.elements() == 0) {
    return {};
  }
  auto guard = device_guard::enter(stream.device());
  if (!guard) {
    return std::move(guard).error();
  }
  const auto status = out == dtype::float32
                          ? launch(src, shape, k, static_cast<float*>(dst), stream.get())
                          : launch(src, shape, k, static_cast<std::uint16_t*>(dst), stream.get());
  return cuda_check(status, "cudaLaunchKernel (normalize_kernel)", stream.device());
}

}  // namespace conveyor::cuda
