// The learned latency budget and the pixel cost model, on constructed latency sequences. No
// clocks: every latency is an argument.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

#include "core/batching/latency_budget.hpp"

namespace conveyor {
namespace {

constexpr std::int64_t ms = 1'000'000;

latency_budget_settings eager(double percentile, std::int64_t min_budget_ns, std::size_t window) {
  latency_budget_settings s;
  s.percentile = percentile;
  s.min_budget_ns = min_budget_ns;
  s.window = window;
  s.warm_up = 1;
  s.recompute_every = 1;
  return s;
}

// 1..n ms in a scrambled (seeded) order.
std::vector<std::int64_t> one_to_n_ms(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 1; i <= n; ++i) {
    v.push_back(i * ms);
  }
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  return v;
}

// The cost model of the brief: 1 ms fixed plus 10 ns per pixel.
std::int64_t linear_cost(std::int64_t pixels) {
  return 1 * ms + 10 * pixels;
}

// `count` images of 0.1 to 12 megapixels, seeded; each recorded twice, once `noise` above and
// once below its cost, so a least-squares fit sees exactly the linear model.
void record_linear(latency_budget& b, int count, std::uint64_t seed, std::int64_t noise = 0) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> pixels(100'000, 12'000'000);
  for (int i = 0; i < count; ++i) {
    auto p = pixels(rng);
    b.record(linear_cost(p) + noise, p);
    b.record(linear_cost(p) - noise, p);
  }
}

void expect_within_percent(std::int64_t actual, std::int64_t expected, double percent) {
  EXPECT_LE(std::abs(static_cast<double>(actual - expected)),
            percent / 100.0 * static_cast<double>(expected))
      << actual << " vs " << expected;
}

TEST(LatencyBudget, IsTheNearestRankPercentileOfTheWindow) {
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    latency_budget p90(eager(90, 0, 100));
    latency_budget p50(eager(50, 0, 100));
    for (auto v : one_to_n_ms(100, seed)) {
      p90.record(v);
      p50.record(v);
    }
    EXPECT_EQ(p90.budget_ns(), 90 * ms);
    EXPECT_EQ(p50.budget_ns(), 50 * ms);
    EXPECT_TRUE(p90.over_budget(90 * ms + 1));
    EXPECT_FALSE(p90.over_budget(90 * ms));
  }
}

TEST(LatencyBudget, NeverGoesBelowTheFloor) {
  latency_budget b(eager(90, 5 * ms, 100));
  for (int i = 0; i < 100; ++i) {
    b.record(1 * ms);
  }
  EXPECT_EQ(b.budget_ns(), 5 * ms);
  b.record(1000 * ms);  // one slow sample of 100 does not move the 90th percentile
  EXPECT_EQ(b.budget_ns(), 5 * ms);
}

TEST(LatencyBudget, HandsNothingOffDuringTheWarmUp) {
  latency_budget_settings s;  // warm-up 32, percentile 90, floor 5 ms
  s.recompute_every = 1;
  latency_budget b(s);
  for (int i = 1; i < 32; ++i) {
    b.record(i * ms, 1'000'000);
    EXPECT_EQ(b.budget_ns(), latency_budget::no_hand_off) << i;
    EXPECT_FALSE(b.warm());
    EXPECT_FALSE(b.over_budget(1'000'000 * ms));
    EXPECT_FALSE(b.is_predicted_straggler(1'000'000'000));
  }
  b.record(32 * ms, 1'000'000);
  EXPECT_TRUE(b.warm());
  EXPECT_EQ(b.budget_ns(), 29 * ms);  // rank ceil(0.9 * 32) = 29
}

TEST(LatencyBudget, IsRecomputedOnlyEveryMObservations) {
  latency_budget_settings s = eager(90, 0, 1024);
  s.warm_up = 10;
  s.recompute_every = 16;
  latency_budget b(s);
  for (int i = 0; i < 10; ++i) {
    b.record(1 * ms);
  }
  EXPECT_EQ(b.budget_ns(), 1 * ms);
  for (int i = 0; i < 15; ++i) {
    b.record(100 * ms);
    EXPECT_EQ(b.budget_ns(), 1 * ms);
  }
  b.record(100 * ms);  // the 26th observation: 16 after the warm-up
  EXPECT_EQ(b.budget_ns(), 100 * ms);
}

TEST(LatencyBudget, TheWindowForgets) {
  latency_budget b(eager(100, 0, 100));
  for (int i = 0; i < 100; ++i) {
    b.record(50 * ms);
  }
  for (int i = 0; i < 99; ++i) {
    b.record(2 * ms);
  }
  EXPECT_EQ(b.budget_ns(), 50 * ms);  // one slow observation is still in the window
  b.record(2 * ms);
  EXPECT_EQ(b.budget_ns(), 2 * ms);
}

TEST(LatencyBudget, PredictedCostTracksALinearModel) {
  for (std::int64_t noise : {std::int64_t{0}, 3 * ms}) {
    latency_budget b;
    record_linear(b, 512, 7, noise);
    for (std::int64_t p : {50'000, 250'000, 1'000'000, 4'000'000, 12'000'000, 24'000'000}) {
      expect_within_percent(b.predicted_ns(p), linear_cost(p), 1.0);
    }
  }
}

TEST(LatencyBudget, TheCostModelForgetsWithTheWindow) {
  latency_budget_settings s;
  s.window = 256;
  latency_budget b(s);
  record_linear(b, 128, 1);
  std::mt19937_64 rng(2);
  std::uniform_int_distribution<std::int64_t> pixels(100'000, 12'000'000);
  for (int i = 0; i < 1000; ++i) {  // a slower machine: 2 ms + 20 ns per pixel
    auto p = pixels(rng);
    b.record(2 * ms + 20 * p, p);
  }
  expect_within_percent(b.predicted_ns(5'000'000), 2 * ms + 20 * 5'000'000, 1.0);
}

TEST(LatencyBudget, LargeImagesArePredictedStragglersAndSmallOnesAreNot) {
  latency_budget b;
  record_linear(b, 512, 11);
  ASSERT_TRUE(b.warm());
  // p90 of 0.1..12 MP images is about 10.9 MP worth: 110 ms.
  EXPECT_GT(b.budget_ns(), 100 * ms);
  EXPECT_TRUE(b.is_predicted_straggler(24'000'000));
  EXPECT_TRUE(b.is_predicted_straggler(12'000'000));
  EXPECT_FALSE(b.is_predicted_straggler(300'000));
  EXPECT_FALSE(b.is_predicted_straggler(5'000'000));
  // straggler_pixels() is the boundary of predicted_ns() > budget_ns().
  auto edge = b.straggler_pixels();
  EXPECT_LE(b.predicted_ns(edge), b.budget_ns());
  EXPECT_GT(b.predicted_ns(edge + 1000), b.budget_ns());
  EXPECT_FALSE(b.is_predicted_straggler(edge));
  EXPECT_TRUE(b.is_predicted_straggler(edge + 1));
}

TEST(LatencyBudget, OneImageSizeGivesACostPerPixel) {
  latency_budget b(eager(90, 0, 64));
  for (int i = 0; i < 64; ++i) {
    b.record(5 * ms, 1'000'000);
  }
  EXPECT_EQ(b.predicted_ns(2'000'000), 10 * ms);
  EXPECT_TRUE(b.is_predicted_straggler(1'000'001));
  EXPECT_FALSE(b.is_predicted_straggler(1'000'000));
}

TEST(LatencyBudget, BiggerImagesLookingCheaperPredictTheMean) {
  latency_budget b(eager(90, 0, 64));
  for (int i = 0; i < 32; ++i) {
    b.record(6 * ms, 1'000'000);
    b.record(4 * ms, 2'000'000);
  }
  EXPECT_EQ(b.predicted_ns(100'000'000), 5 * ms);
  EXPECT_EQ(b.straggler_pixels(), latency_budget::no_hand_off);
}

TEST(LatencyBudget, LatenciesWithoutAPixelCountFeedOnlyTheBudget) {
  latency_budget b(eager(90, 0, 64));
  for (int i = 0; i < 64; ++i) {
    b.record(5 * ms);
  }
  EXPECT_EQ(b.budget_ns(), 5 * ms);
  EXPECT_EQ(b.predicted_ns(1'000'000), 0);
  EXPECT_FALSE(b.is_predicted_straggler(1'000'000'000));
}

}  // namespace
}  // namespace conveyor
