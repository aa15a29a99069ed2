// How the CPU and the GPU share a decode step's JPEGs (core/transforms/decode_share.hpp): each
// size group tries both, then sends its images to the one measured faster for that size, with
// one in explore_every to the other; a change of rates moves the share; declines turn a group
// to the CPU, busy lanes do not; failures in a row end the GPU's share. Measurements are injected:
// nothing here is timed.
#include <gtest/gtest.h>

#include "core/transforms/decode_share.hpp"

namespace conveyor {
namespace {

using decoder = decode_share::decoder;

constexpr std::int64_t small = 500 * 375;    // an ImageNet-sized JPEG
constexpr std::int64_t large = 3000 * 2000;  // one of the heavy tail

/// Chooses for `n` images of `pixels`, recording `cpu_ns` / `gpu_ns` for each as measured;
/// returns how many went to the GPU.
int run(decode_share& share, std::int64_t pixels, int n, std::int64_t cpu_ns, std::int64_t gpu_ns) {
  int gpu = 0;
  for (int i = 0; i < n; ++i) {
    auto d = share.choose(pixels);
    share.record(d, pixels, d == decoder::gpu ? gpu_ns : cpu_ns);
    gpu += d == decoder::gpu ? 1 : 0;
  }
  return gpu;
}

TEST(DecodeShare, SizeGroupsArePowersOfTwo) {
  EXPECT_EQ(decode_share::group_of(0), 0);
  EXPECT_EQ(decode_share::group_of(1), 0);
  EXPECT_EQ(decode_share::group_of(2), 1);
  EXPECT_EQ(decode_share::group_of(1023), 9);
  EXPECT_EQ(decode_share::group_of(1024), 10);
  EXPECT_EQ(decode_share::group_of(std::int64_t{1} << 62), 39);
}

TEST(DecodeShare, EachGroupTriesTheGpuThenTheCpuThenTakesTheFaster) {
  decode_share share;  // first_tries 3
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(share.choose(large), decoder::gpu);
    share.record(decoder::gpu, large, 2'000'000);
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(share.choose(large), decoder::cpu);
    share.record(decoder::cpu, large, 40'000'000);
  }
  // The GPU is faster for large images: they go there, one in 32 still to the CPU.
  EXPECT_EQ(run(share, large, 320, 40'000'000, 2'000'000), 310);
  // Small images are a group of their own, where the CPU is faster.
  EXPECT_EQ(run(share, small, 6, 1'000'000, 3'000'000), 3);
  EXPECT_EQ(run(share, small, 320, 1'000'000, 3'000'000), 10);
  auto t = share.totals();
  EXPECT_EQ(t.gpu_images, 3 + 310 + 3 + 10);
  EXPECT_EQ(t.cpu_images, 3 + 10 + 3 + 310);
}

TEST(DecodeShare, AGpuThatSlowsDownLosesItsShare) {
  decode_share share;
  EXPECT_GT(run(share, large, 200, 40'000'000, 2'000'000), 180);
  // The trainer's kernels now hold the GPU: a JPEG there waits 100 ms. The CPU's share comes
  // back within the explorations that measure it.
  run(share, large, 400, 40'000'000, 100'000'000);
  EXPECT_LT(run(share, large, 320, 40'000'000, 100'000'000), 12);
}

TEST(DecodeShare, BusyLanesAreCountedNotMeasured) {
  decode_share share;
  run(share, large, 6, 40'000'000, 2'000'000);  // the first tries: the GPU is faster
  for (int i = 0; i < 100; ++i) {
    share.gpu_busy();  // threads outnumber lanes: the CPU took these
  }
  EXPECT_EQ(run(share, large, 320, 40'000'000, 2'000'000), 310);  // still the GPU's group
  EXPECT_EQ(share.totals().gpu_busy, 100);
}

TEST(DecodeShare, FailuresInARowEndTheGpusShareAndDeclinesDoNot) {
  decode_share::options o;
  o.give_up_after = 4;
  decode_share share(o);
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(share.gpu_missed(large, false));  // declines: busy lanes, a JPEG it won't read
  }
  EXPECT_FALSE(share.gpu_missed(large, true));
  EXPECT_FALSE(share.gpu_missed(large, true));
  share.record(decoder::gpu, large, 1000);  // a success breaks the run
  EXPECT_FALSE(share.gpu_missed(large, true));
  EXPECT_FALSE(share.gpu_missed(large, true));
  EXPECT_FALSE(share.gpu_missed(large, true));
  EXPECT_TRUE(share.gpu_missed(large, true));   // the fourth in a row
  EXPECT_FALSE(share.gpu_missed(large, true));  // said once
  EXPECT_EQ(run(share, large, 100, 40'000'000, 1), 0);
  auto t = share.totals();
  EXPECT_TRUE(t.gpu_given_up);
  EXPECT_EQ(t.gpu_declined, 10);
  EXPECT_EQ(t.gpu_failed, 7);
}

TEST(DecodeShare, AGroupTheGpuDeclinesTurnsToTheCpuUntilAnExplorationFindsItFree) {
  decode_share share;
  // Every lane busy: the first tries are declined (and the CPU decodes those).
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(share.choose(large), decoder::gpu);
    share.gpu_missed(large, false);
    share.record(decoder::cpu, large, 40'000'000);
  }
  // Counted as twice the CPU's time: the group is the CPU's, but for the explorations.
  int gpu = 0;
  for (int i = 0; i < 64; ++i) {
    auto d = share.choose(large);
    if (d == decoder::gpu) {
      ++gpu;
      share.gpu_missed(large, false);
    } else {
      share.record(decoder::cpu, large, 40'000'000);
    }
  }
  EXPECT_EQ(gpu, 2);
  // The lanes free up: explorations that succeed bring the GPU back.
  EXPECT_GT(run(share, large, 32 * 12, 40'000'000, 2'000'000), 32 * 6);
  EXPECT_FALSE(share.totals().gpu_given_up);
}

}  // namespace
}  // namespace conveyor
