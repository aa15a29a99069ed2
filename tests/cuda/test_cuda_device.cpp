// The CUDA build path: device discovery never fails for lack of a GPU, and a kernel round
// trip works on every device that is there (skipped where there is none).
#include <gtest/gtest.h>

#include "core/cuda/device_query.hpp"
#include "core/cuda/self_test.hpp"
#include "cuda_fixture.hpp"

namespace conveyor::cuda {
namespace {

TEST(CudaDevice, ListingDevicesNeverFailsForLackOfAGpu) {
  auto devices = list_devices();
  ASSERT_TRUE(devices) << devices.error().what();
  for (const auto& d : *devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.memory_bytes, 0u);
  }
}

TEST(CudaDevice, KernelRoundTripOnEveryDevice) {
  auto first = testing::first_device();
  CONVEYOR_NEEDS_GPU(first);
  auto devices = list_devices();
  ASSERT_TRUE(devices);
  for (const auto& d : *devices) {
    auto n = kernel_round_trip(d.id, 1 << 20);
    ASSERT_TRUE(n) << n.error().what();
    EXPECT_EQ(*n, 1 << 20);
  }
}

}  // namespace
}  // namespace conveyor::cuda
