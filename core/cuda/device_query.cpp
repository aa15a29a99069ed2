#include "core/cuda/device_query.hpp"

#include "core/cuda/cuda_check.hpp"

namespace conveyor::cuda {
namespace {

/// "12.4" from CUDA's 12040.
std::string version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

/// Why cudaGetDeviceCount's `status` is no error but zero devices, or what the error is.
expected<void> count_failure(cudaError_t status) {
  int driver = 0;
  (void)cudaDriverGetVersion(&driver);  // 0: no driver is installed
  int runtime = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  cudaGetLastError();  // not sticky: later calls start clean
  if (status == cudaErrorInsufficientDriver && driver > 0) {
    return error{errc::device_error,
                 "the NVIDIA driver supports CUDA " + version_text(driver) +
                     ", older than the CUDA runtime " + version_text(runtime) +
                     " this build carries: update the driver, or build with an older toolkit"};
  }
  if (status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice) {
    return {};
  }
  return cuda_check(status, "cudaGetDeviceCount", -1);
}

/// The number of devices, asked once; 0 where CUDA cannot be used.
int device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

}  // namespace

expected<std::vector<device_info>> list_devices() {
  int count = 0;
  if (auto status = cudaGetDeviceCount(&count); status != cudaSuccess) {
    if (auto ok = count_failure(status); !ok) {
      return std::move(ok).error();
    }
    return std::vector<device_info>{};
  }
  std::vector<device_info> devices;
  for (int id = 0; id < count; ++id) {
    cudaDeviceProp prop{};
    CONVEYOR_CUDA_TRY(id, cudaGetDeviceProperties(&prop, id));
    devices.push_back({id, prop.name, prop.major, prop.minor, prop.totalGlobalMem});
  }
  return devices;
}

expected<void> check_device(int device, const char* call) {
  const int count = device_count();
  if (device >= 0 && device < count) {
    return {};
  }
  return error{errc::invalid_argument, "CUDA device " + std::to_string(device) + ": " + call +
                                           " not made: no such device (this process has " +
                                           std::to_string(count) + ")"};
}

}  // namespace conveyor::cuda
