// The ring protocol (support/ring_protocol.hpp) over the CUDA engine, on the first GPU: the
// same tests as the host engine's (tests/test_slot_ring.cpp), with a trainer whose kernels run
// on a non-blocking stream of its own. Skipped where there is no GPU.
#include <gtest/gtest.h>

#include "../support/ring_protocol.hpp"
#include "cuda_fixture.hpp"
#include "cuda_kit.hpp"

namespace conveyor::testing {

using cuda_kits = ::testing::Types<cuda::testing::cuda_kit>;
INSTANTIATE_TYPED_TEST_SUITE_P(CudaEngine, RingProtocol, cuda_kits);

TEST(CudaEngineChecks, AMissingDeviceIsAnErrorThatNamesIt) {
  const int missing = cuda::testing::missing_device();
  auto engine = cuda::make_cuda_engine(missing);
  ASSERT_FALSE(engine);
  EXPECT_NE(engine.error().message().find("CUDA device " + std::to_string(missing)),
            std::string::npos)
      << engine.error().what();
}

}  // namespace conveyor::testing

namespace conveyor::testing {
namespace {

/// Records a release with `stream` behind a kernel that waits for the test, and checks that the
/// engine's event follows that kernel: not complete before it ends, complete after.
void expect_release_follows(copy_engine& engine, cudaStream_t stream) {
  auto event = engine.create_event();
  ASSERT_TRUE(event) << event.error().what();
  cuda::testing::host_flag flag;
  ASSERT_EQ(cuda::testing::launch_wait_for_host(stream, flag.on_device()), cudaSuccess);
  auto recorded = engine.record_on(**event, consumer_stream{stream});
  ASSERT_TRUE(recorded) << recorded.error().what();
  auto early = engine.query(**event);
  ASSERT_TRUE(early) << early.error().what();
  EXPECT_FALSE(*early) << "the release did not wait for the trainer's kernel";
  flag.set();
  auto late = engine.wait_until(**event, copy_engine::clock::now() + std::chrono::minutes(1));
  ASSERT_TRUE(late) << late.error().what();
  EXPECT_TRUE(*late);
}

// Issue 34: a release on another device's stream (a peer GPU that reads the batch), or with the
// null stream from a thread whose current device is another, was recorded with an event of the
// engine's device: CUDA refuses the first, and the second went to the engine device's default
// stream instead of the trainer's. Both are recorded where the trainer's work is.
TEST(CudaEngineChecks, AReleaseOnAnotherDevicesStreamFollowsTheWorkThere) {
  auto devices = cuda::list_devices();
  ASSERT_TRUE(devices) << devices.error().what();
  if (devices->size() < 2) {
    GTEST_SKIP() << "needs two CUDA devices (" << devices->size() << " here)";
  }
  auto engine = cuda::make_cuda_engine(0);
  ASSERT_TRUE(engine) << engine.error().what();
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  cudaStream_t peer = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&peer, cudaStreamNonBlocking), cudaSuccess);
  expect_release_follows(**engine, peer);
  expect_release_follows(**engine, nullptr);  // device 1's legacy default stream
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 1) << "the release changed the trainer's current device";
  cudaStreamDestroy(peer);
}

}  // namespace
}  // namespace conveyor::testing
