// The normalize kernel against the CPU reference (core/transforms/normalize_batch.hpp, itself
// proven equal to the CPU normalize step): float32 within 1e-6, bfloat16 bit for bit, from CHW and
// HWC uint8 batches of awkward sizes, and over grids that need their loops.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "../support/normalize_fixtures.hpp"
#include "core/cuda/cuda_buffer.hpp"
#include "core/cuda/cuda_event.hpp"
#include "core/cuda/normalize_kernel.hpp"
#include "core/transforms/normalize_batch.hpp"
#include "cuda_fixture.hpp"
#include "trainer_kernels.hpp"

namespace conveyor::cuda {
namespace {

using testing::cuda_test;
using testing::to_host;

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<std::uint8_t>(i < 256 ? i : rng());  // every value at least once
  }
  return out;
}

class NormalizeKernel : public cuda_test {
 protected:
  /// Runs the kernel on `shape` random bytes and returns its output bytes beside the
  /// reference's.
  std::pair<std::vector<std::uint8_t>, std::vector<std::uint8_t>> run(
      const uint8_batch_shape& shape, dtype out, const normalize_spec& spec) {
    auto k = coefficients_of(spec);
    auto input = random_bytes(shape.elements(), 11);
    const std::size_t out_bytes = shape.elements() * size_of(out);
    std::vector<std::uint8_t> want(out_bytes);
    EXPECT_TRUE(normalize_batch(input.data(), shape, k, out, want.data()));

    auto stream = cuda_stream::create(device_);
    auto src = device_buffer::allocate(device_, input.size());
    auto dst = device_buffer::allocate(device_, out_bytes);
    EXPECT_TRUE(stream && src && dst);
    EXPECT_EQ(cudaMemcpy(src->data(), input.data(), input.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
    auto launched = launch_normalize(src->data(), shape, k, out, dst->data(), *stream);
    EXPECT_TRUE(launched) << launched.error().what();
    EXPECT_TRUE(stream->synchronize());
    auto got = to_host(dst->data(), out_bytes);
    // Freed with the test, not here: cudaFree waits for all of the device's work, a test's
    // kernel still waiting for the host too (it would wait out that kernel's minute).
    if (src && dst) {
      kept_.push_back(std::move(*src));
      kept_.push_back(std::move(*dst));
    }
    return {std::move(got), want};
  }

 private:
  std::vector<device_buffer> kept_;
};

void expect_close_floats(const std::vector<std::uint8_t>& got,
                         const std::vector<std::uint8_t>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size() / sizeof(float); ++i) {
    float g = 0;
    float w = 0;
    std::memcpy(&g, got.data() + i * sizeof(float), sizeof g);
    std::memcpy(&w, want.data() + i * sizeof(float), sizeof w);
    ASSERT_NEAR(g, w, 1e-6) << "element " << i;
  }
}

TEST_F(NormalizeKernel, Float32MatchesTheCpuReferenceFromChwAndHwc) {
  for (auto layout : {pixel_layout::chw, pixel_layout::hwc}) {
    for (const auto& spec : {normalize_spec{}, conveyor::testing::unusual_normalize_spec()}) {
      auto [got, want] = run({5, 3, 37, 53, layout}, dtype::float32, spec);
      expect_close_floats(got, want);
    }
  }
}

TEST_F(NormalizeKernel, Bfloat16IsTheReferenceRoundedToNearestEvenBitForBit) {
  for (auto layout : {pixel_layout::chw, pixel_layout::hwc}) {
    auto [got, want] = run({4, 3, 31, 29, layout}, dtype::bfloat16, normalize_spec{});
    EXPECT_EQ(got, want);
  }
}

TEST_F(NormalizeKernel, ManyPlanesAndLargePlanesAreCovered) {
  // More planes than gridDim.y may hold, and more pixels per plane than one grid row covers.
  auto [many, many_want] = run({21846, 3, 1, 2, pixel_layout::hwc}, dtype::float32, {});
  expect_close_floats(many, many_want);
  auto [large, large_want] = run({1, 3, 1100, 1000, pixel_layout::chw}, dtype::bfloat16, {});
  EXPECT_EQ(large, large_want);
}

// Issue 34: cudaGetLastError after <<<>>> could return the cudaErrorNotReady that an earlier
// event query of this thread left behind, failing a good launch. The launch's own status counts.
TEST_F(NormalizeKernel, ALaunchAfterAQueryOfUnfinishedWorkSucceeds) {
  auto busy = cuda_stream::create(device_);
  ASSERT_TRUE(busy) << busy.error().what();
  testing::host_flag flag;
  ASSERT_EQ(testing::launch_wait_for_host(busy->get(), flag.on_device()), cudaSuccess);
  auto event = cuda_event::create(device_);
  ASSERT_TRUE(event && event->record(*busy));
  auto ready = event->ready();  // cudaErrorNotReady, on this thread
  ASSERT_TRUE(ready) << ready.error().what();
  ASSERT_FALSE(*ready);
  auto [got, want] = run({2, 3, 5, 7, pixel_layout::chw}, dtype::float32, {});  // launches
  expect_close_floats(got, want);
  flag.set();
  EXPECT_TRUE(busy->synchronize());
}

TEST(NormalizeKernelChecks, RefusesABatchItCannotNormaliseBeforeTouchingTheDevice) {
  cuda_stream none;
  auto k = coefficients_of(normalize_spec{});
  auto bad =
      launch_normalize(nullptr, {1, 4, 2, 2, pixel_layout::chw}, k, dtype::float32, nullptr, none);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), errc::invalid_argument);
  auto bytes =
      launch_normalize(nullptr, {1, 3, 2, 2, pixel_layout::chw}, k, dtype::uint8, nullptr, none);
  ASSERT_FALSE(bytes);
}

}  // namespace
}  // namespace conveyor::cuda
