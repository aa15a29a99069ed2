#pragma once
/// The fixture of the CUDA tests: they run on the first CUDA device and are skipped where
/// there is none (no driver or no GPU), so the suite passes on CPU-only machines. A driver too
/// old for the runtime is a failure, never a skip; with CONVEYOR_REQUIRE_GPU set (the GPU
/// bundle's run-tests sets it), so is a machine without a GPU.

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/cuda/device_query.hpp"

namespace conveyor::cuda::testing {

/// `bytes` bytes of device memory at `src`, copied back to the host.
inline std::vector<std::uint8_t> to_host(const void* src, std::size_t bytes) {
  std::vector<std::uint8_t> out(bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), src, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

/// CONVEYOR_REQUIRE_GPU is set (and not 0): the tests must run on a GPU.
inline bool gpu_required() {
  const char* v = std::getenv("CONVEYOR_REQUIRE_GPU");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

/// The first CUDA device; errc::not_found where there is none, the listing's error (a driver
/// too old for the runtime) otherwise.
inline expected<int> first_device() {
  auto devices = list_devices();
  if (!devices) {
    return std::move(devices).error();
  }
  if (devices->empty()) {
    return error{errc::not_found, "no CUDA device on this machine"};
  }
  return devices->front().id;
}

/// Whether a test without `device` is skipped (no GPU here, none required) rather than failed.
inline bool skippable(const expected<int>& device) {
  return !device && device.error().code() == errc::not_found && !gpu_required();
}

/// In a test or SetUp: skips or fails (see skippable) unless `device` is a device.
#define CONVEYOR_NEEDS_GPU(device)                        \
  do {                                                    \
    if (!(device)) {                                      \
      if (::conveyor::cuda::testing::skippable(device)) { \
        GTEST_SKIP() << (device).error().message();       \
      }                                                   \
      FAIL() << (device).error().what();                  \
    }                                                     \
  } while (false)

class cuda_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = first_device();
    CONVEYOR_NEEDS_GPU(device);
    device_ = *device;
    ASSERT_EQ(cudaSetDevice(device_), cudaSuccess);
  }

  int device_ = 0;
};

/// A flag in mapped pinned memory that the host sets and a kernel reads
/// (trainer_kernels.hpp's launch_wait_for_host): work queued behind that kernel waits for the
/// test. Set at the end, so that no kernel spins past the test.
class host_flag {
 public:
  host_flag() {
    EXPECT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&host_), sizeof(int),
                            cudaHostAllocMapped | cudaHostAllocPortable),
              cudaSuccess);
    if (host_ != nullptr) {
      *host_ = 0;
      EXPECT_EQ(cudaHostGetDevicePointer(&device_, host_, 0), cudaSuccess);
    }
  }
  ~host_flag() {
    set();
    (void)cudaDeviceSynchronize();
    cudaFreeHost(host_);
  }
  host_flag(const host_flag&) = delete;
  host_flag& operator=(const host_flag&) = delete;

  const volatile int* on_device() const { return device_; }
  void set() {
    if (host_ != nullptr) {
      *static_cast<volatile int*>(host_) = 1;  // a kernel polls it
    }
  }

 private:
  int* host_ = nullptr;
  int* device_ = nullptr;
};

/// A device id that does not exist here, for the error paths (on a machine without a driver
/// every id fails the same way).
inline int missing_device() {
  auto devices = list_devices();
  return devices ? static_cast<int>(devices->size()) + 3 : 3;
}

}  // namespace conveyor::cuda::testing
