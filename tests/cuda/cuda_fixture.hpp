#pragma once
/// The fixture of the CUDA tests: they run on the first CUDA device and are skipped where
/// there is none (no driver or no GPU), so the suite passes on CPU-only machines.

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "core/cuda/device_query.hpp"

namespace conveyor::cuda::testing {

/// `bytes` bytes of device memory at `src`, copied back to the host.
inline std::vector<std::uint8_t> to_host(const void* src, std::size_t bytes) {
  std::vector<std::uint8_t> out(bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), src, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

class cuda_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto devices = list_devices();
    ASSERT_TRUE(devices) << devices.error().what();
    if (devices->empty()) {
      GTEST_SKIP() << "no CUDA device on this machine";
    }
    device_ = devices->front().id;
    ASSERT_EQ(cudaSetDevice(device_), cudaSuccess);
  }

  int device_ = 0;
};

/// A device id that does not exist here, for the error paths (on a machine without a driver
/// every id fails the same way).
inline int missing_device() {
  auto devices = list_devices();
  return devices ? static_cast<int>(devices->size()) + 3 : 3;
}

}  // namespace conveyor::cuda::testing
