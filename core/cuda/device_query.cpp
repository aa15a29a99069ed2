#include "core/cuda/device_query.hpp"

#include "core/cuda/cuda_check.hpp"

namespace conveyor::cuda {

expected<std::vector<device_info>> list_devices() {
  int count = 0;
  auto status = cudaGetDeviceCount(&count);
  if (status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return std::vector<device_info>{};
  }
  CONVEYOR_CUDA_TRY(-1, status);
  std::vector<device_info> devices;
  for (int id = 0; id < count; ++id) {
    cudaDeviceProp prop{};
    CONVEYOR_CUDA_TRY(id, cudaGetDeviceProperties(&prop, id));
    devices.push_back({id, prop.name, prop.major, prop.minor, prop.totalGlobalMem});
  }
  return devices;
}

}  // namespace conveyor::cuda
