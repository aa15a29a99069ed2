// A fault of the trainer's own kernel leaves the device's context in a sticky error: the ring
// must surface it (from its next call, or from polling the batch in flight) as an error naming
// the CUDA device, within its deadline, and never wait for ever. In a file of its own: after
// the fault, nothing else in this process can use the device. Skipped where there is no GPU.
#include <gtest/gtest.h>

#include "../support/ring_log.hpp"
#include "core/feeding/slot_ring.hpp"
#include "cuda_kit.hpp"

namespace conveyor::testing {
namespace {

TEST(CudaRingFault, ATrainerKernelFaultFailsTheRingNamingTheDevice) {
  cuda::testing::cuda_kit kit;
  if (auto why = kit.unavailable()) {
    GTEST_SKIP() << *why;
  }
  auto log = std::make_shared<ring_log>();
  ring_options r;
  r.name = "feeder 0";
  r.slots = 2;
  r.deadline = std::chrono::seconds(10);
  r.on_failure = [log](const error& e) { log->failed(e); };
  auto ring = slot_ring::create(kit.engine(), r);
  ASSERT_TRUE(ring) << ring.error().what();
  auto feed = [&](int number) -> expected<void> {
    auto slot = (*ring)->acquire(small_layout());
    if (!slot) {
      return std::move(slot).error();
    }
    return (*ring)->submit(**slot, "batch " + std::to_string(number),
                           [log, number] { log->handed_over(number); });
  };
  ASSERT_TRUE(feed(0));
  ASSERT_TRUE(log->wait_for_batches(1));
  ASSERT_EQ(cuda::testing::launch_trap(kit.stream()), cudaSuccess);
  (*ring)->released(0, kit.trainer());
  ASSERT_TRUE((*ring)->reclaim(0));
  std::optional<error> surfaced;
  for (int b = 1; b < 4 && !surfaced; ++b) {
    if (auto ok = feed(b); !ok) {
      surfaced = ok.error();
    }
  }
  if (!surfaced) {
    surfaced = log->wait_for_failure();
  }
  ASSERT_TRUE(surfaced) << "the fault did not surface within a minute";
  EXPECT_NE(surfaced->message().find("CUDA device " + std::to_string(kit.device())),
            std::string::npos)
      << surfaced->what();
}

}  // namespace
}  // namespace conveyor::testing
