#include "core/cuda/box_reduce_kernel.hpp"

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/device_guard.hpp"

namespace conveyor::cuda {
namespace {

constexpr unsigned block_side = 16;

__global__ void box_reduce_kernel(device_rgb src, device_rgb dst, int factor) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= dst.width || y >= dst.height) {
    return;
  }
  const int x0 = x * factor;
  const int y0 = y * factor;
  const int x1 = min(x0 + factor, src.width);
  const int y1 = min(y0 + factor, src.height);
  unsigned sum[3] = {0, 0, 0};
  for (int sy = y0; sy < y1; ++sy) {
    const std::uint8_t* row = src.data + static_cast<std::size_t>(sy) * src.pitch;
    for (int sx = x0; sx < x1; ++sx) {
      sum[0] += row[3 * sx];
      sum[1] += row[3 * sx + 1];
      sum[2] += row[3 * sx + 2];
    }
  }
  const unsigned n = static_cast<unsigned>((x1 - x0) * (y1 - y0));
  std::uint8_t* out = dst.data + static_cast<std::size_t>(y) * dst.pitch + 3 * x;
  for (int c = 0; c < 3; ++c) {
    out[c] = static_cast<std::uint8_t>((sum[c] + n / 2) / n);
  }
}

}  // namespace

expected<void> launch_box_reduce(const device_rgb& src, const device_rgb& dst, int factor,
                                 const cuda_stream& stream) {
  if (factor < 1 || factor > 8 || src.width < 1 || src.height < 1 ||
      dst.width != reduced_length(src.width, factor) ||
      dst.height != reduced_length(src.height, factor) ||
      src.pitch < 3 * static_cast<std::size_t>(src.width) ||
      dst.pitch < 3 * static_cast<std::size_t>(dst.width)) {
    return error{errc::invalid_argument,
                 "box reduce: a " + std::to_string(src.width) + "x" + std::to_string(src.height) +
                     " image by " + std::to_string(factor) + " is not " +
                     std::to_string(dst.width) + "x" + std::to_string(dst.height)};
  }
  auto guard = device_guard::enter(stream.device());
  if (!guard) {
    return std::move(guard).error();
  }
  dim3 block(block_side, block_side);
  dim3 grid((static_cast<unsigned>(dst.width) + block_side - 1) / block_side,
            (static_cast<unsigned>(dst.height) + block_side - 1) / block_side);
  device_rgb s = src;
  device_rgb d = dst;
  void* args[] = {&s, &d, &factor};
  // The launch's own status: cudaGetLastError could return an earlier call's leftover error.
  return cuda_check(cudaLaunchKernel(reinterpret_cast<const void*>(&box_reduce_kernel), grid, block,
                                     args, 0, stream.get()),
                    "cudaLaunchKernel (box_reduce_kernel)", stream.device());
}

}  // namespace conveyor::cuda
