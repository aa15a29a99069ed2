// latency_tracker: nearest-rank percentiles over a sliding window, with exact expected values,
// and the lazily repaired sorted copy checked against a brute-force sort after every pattern
// of records and queries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <random>

#include "core/metrics/latency_tracker.hpp"

namespace conveyor {
namespace {

constexpr std::int64_t ms = 1'000'000;

// 1..n milliseconds in a shuffled order, so nothing depends on arriving sorted.
latency_tracker shuffled_ms(std::int64_t n, std::size_t window = latency_tracker::default_window) {
  std::vector<std::int64_t> values(static_cast<std::size_t>(n));
  std::iota(values.begin(), values.end(), 1);
  std::shuffle(values.begin(), values.end(), std::mt19937_64(7));
  latency_tracker t(window);
  for (auto v : values) {
    t.record(v * ms);
  }
  return t;
}

TEST(LatencyTracker, EmptyAnswersZero) {
  latency_tracker t;
  EXPECT_EQ(t.count(), 0u);
  EXPECT_EQ(t.total_recorded(), 0u);
  EXPECT_EQ(t.window(), latency_tracker::default_window);
  EXPECT_EQ(t.percentile(0), 0);
  EXPECT_EQ(t.percentile(50), 0);
  EXPECT_EQ(t.percentile(100), 0);
  EXPECT_EQ(t.min(), 0);
  EXPECT_EQ(t.max(), 0);
  EXPECT_EQ(t.mean(), 0.0);
  const latency_snapshot s = t.snapshot();
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.p50, 0);
  EXPECT_EQ(s.p99, 0);
  EXPECT_EQ(s.max, 0);
  EXPECT_EQ(s.mean, 0);
}

TEST(LatencyTracker, OneToHundredMillisecondsNearestRank) {
  auto t = shuffled_ms(100);
  EXPECT_EQ(t.count(), 100u);
  EXPECT_EQ(t.percentile(50), 50 * ms);
  EXPECT_EQ(t.percentile(90), 90 * ms);
  EXPECT_EQ(t.percentile(95), 95 * ms);
  EXPECT_EQ(t.percentile(99), 99 * ms);
  EXPECT_EQ(t.percentile(0), 1 * ms);  // the minimum
  EXPECT_EQ(t.percentile(100), 100 * ms);
  EXPECT_EQ(t.min(), 1 * ms);
  EXPECT_EQ(t.max(), 100 * ms);
  // Between ranks nearest-rank rounds up: rank ceil(p / 100 * n).
  EXPECT_EQ(t.percentile(0.5), 1 * ms);
  EXPECT_EQ(t.percentile(1), 1 * ms);
  EXPECT_EQ(t.percentile(1.01), 2 * ms);
  EXPECT_EQ(t.percentile(50.5), 51 * ms);
  EXPECT_EQ(t.percentile(99.01), 100 * ms);
  EXPECT_DOUBLE_EQ(t.mean(), 50.5 * ms);
}

TEST(LatencyTracker, SnapshotOfOneToHundred) {
  auto t = shuffled_ms(100);
  const latency_snapshot s = t.snapshot();
  EXPECT_EQ(s.count, 100u);
  EXPECT_EQ(s.p50, 50 * ms);
  EXPECT_EQ(s.p90, 90 * ms);
  EXPECT_EQ(s.p95, 95 * ms);
  EXPECT_EQ(s.p99, 99 * ms);
  EXPECT_EQ(s.max, 100 * ms);
  EXPECT_EQ(s.mean, 50'500'000);
}

TEST(LatencyTracker, SmallCountsRoundRanksUp) {
  latency_tracker t;
  for (std::int64_t v : {40, 10, 30, 20}) {
    t.record(v);
  }
  EXPECT_EQ(t.percentile(25), 10);  // rank 1
  EXPECT_EQ(t.percentile(26), 20);  // rank ceil(1.04) = 2
  EXPECT_EQ(t.percentile(50), 20);
  EXPECT_EQ(t.percentile(75), 30);
  EXPECT_EQ(t.percentile(90), 40);  // rank ceil(3.6) = 4
  EXPECT_DOUBLE_EQ(t.mean(), 25.0);
}

TEST(LatencyTracker, FractionalPercentilesAreNotPushedUpByRounding) {
  auto t = shuffled_ms(1000);
  EXPECT_EQ(t.percentile(99.9), 999 * ms);  // 99.9 / 100 * 1000 is 999.0000000000001 in doubles
  EXPECT_EQ(t.percentile(99.95), 1000 * ms);
  EXPECT_EQ(t.percentile(0.1), 1 * ms);
  EXPECT_EQ(t.percentile(0.2), 2 * ms);
  EXPECT_EQ(t.percentile(57.3), 573 * ms);
}

TEST(LatencyTracker, OutOfRangePercentilesClamp) {
  auto t = shuffled_ms(100);
  EXPECT_EQ(t.percentile(-5), 1 * ms);
  EXPECT_EQ(t.percentile(150), 100 * ms);
  EXPECT_EQ(t.percentile(std::numeric_limits<double>::infinity()), 100 * ms);
  EXPECT_EQ(t.percentile(std::numeric_limits<double>::quiet_NaN()), 1 * ms);
}

TEST(LatencyTracker, SingleValueIsEveryPercentile) {
  latency_tracker t;
  t.record(std::chrono::microseconds(250));
  EXPECT_EQ(t.count(), 1u);
  EXPECT_EQ(t.percentile(0), 250'000);
  EXPECT_EQ(t.percentile(50), 250'000);
  EXPECT_EQ(t.percentile(100), 250'000);
  EXPECT_DOUBLE_EQ(t.mean(), 250'000.0);
}

TEST(LatencyTracker, WindowForgetsOldValues) {
  auto t = shuffled_ms(100, 10);  // keeps the last 10 recorded, whatever they are
  EXPECT_EQ(t.count(), 10u);
  EXPECT_EQ(t.total_recorded(), 100u);

  latency_tracker w(10);
  for (std::int64_t v = 1; v <= 100; ++v) {
    w.record(v * ms);
  }
  EXPECT_EQ(w.count(), 10u);
  EXPECT_EQ(w.min(), 91 * ms);
  EXPECT_EQ(w.percentile(50), 95 * ms);
  EXPECT_EQ(w.max(), 100 * ms);
  EXPECT_DOUBLE_EQ(w.mean(), 95.5 * ms);

  // A slow spike leaves the window after `window` more records.
  w.record(5000 * ms);
  EXPECT_EQ(w.max(), 5000 * ms);
  for (int i = 0; i < 9; ++i) {
    w.record(1 * ms);
    EXPECT_EQ(w.max(), 5000 * ms);
  }
  w.record(1 * ms);
  EXPECT_EQ(w.max(), 1 * ms);
  EXPECT_DOUBLE_EQ(w.mean(), 1.0 * ms);
}

TEST(LatencyTracker, WindowOfZeroKeepsOne) {
  latency_tracker t(0);
  EXPECT_EQ(t.window(), 1u);
  t.record(3);
  t.record(7);
  EXPECT_EQ(t.count(), 1u);
  EXPECT_EQ(t.min(), 7);
  EXPECT_EQ(t.max(), 7);
}

TEST(LatencyTracker, DuplicatesAndNegativesAreKept) {
  latency_tracker t(4);
  for (std::int64_t v : {5, 5, -3, 5}) {
    t.record(v);
  }
  EXPECT_EQ(t.min(), -3);
  EXPECT_EQ(t.percentile(50), 5);
  t.record(5);  // evicts a 5: still three 5s and the -3
  EXPECT_EQ(t.min(), -3);
  EXPECT_EQ(t.percentile(25), -3);
  EXPECT_EQ(t.percentile(26), 5);
  t.record(-3);  // evicts a 5
  t.record(0);   // evicts the -3
  EXPECT_EQ(t.min(), -3);
  EXPECT_EQ(t.percentile(50), 0);
  EXPECT_EQ(t.max(), 5);
}

TEST(LatencyTracker, ClearForgetsEverything) {
  auto t = shuffled_ms(100, 50);
  EXPECT_EQ(t.max(), 100 * ms);
  t.clear();
  EXPECT_EQ(t.count(), 0u);
  EXPECT_EQ(t.total_recorded(), 0u);
  EXPECT_EQ(t.window(), 50u);
  EXPECT_EQ(t.max(), 0);
  EXPECT_EQ(t.mean(), 0.0);
  t.record(4);
  t.record(2);
  EXPECT_EQ(t.min(), 2);
  EXPECT_EQ(t.max(), 4);
  EXPECT_DOUBLE_EQ(t.mean(), 3.0);
}

// The reference: sort the last `window` values and take the nearest rank.
std::int64_t brute_percentile(const std::deque<std::int64_t>& window, double p) {
  if (window.empty()) {
    return 0;
  }
  std::vector<std::int64_t> v(window.begin(), window.end());
  std::sort(v.begin(), v.end());
  const auto n = static_cast<double>(v.size());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * n - 1e-9));
  rank = std::clamp<std::size_t>(rank, 1, v.size());
  return v[rank - 1];
}

// Bursts of every length between queries exercise both the one-by-one repair and the re-sort
// (past window / 8 records); narrow value ranges make duplicates common.
TEST(LatencyTracker, MatchesBruteForceUnderAnyRecordQueryPattern) {
  std::mt19937_64 rng(2024);
  for (std::size_t window : {1u, 2u, 3u, 7u, 64u, 200u, 1024u}) {
    for (std::int64_t range : {3, 1000, 1'000'000'000}) {
      latency_tracker t(window);
      std::deque<std::int64_t> ref;
      std::uniform_int_distribution<std::int64_t> value(-range / 10, range);
      std::uniform_int_distribution<int> burst_kind(0, 3);
      for (int round = 0; round < 300; ++round) {
        const std::size_t burst = burst_kind(rng) == 0 ? rng() % (window + 5) : rng() % 4;
        for (std::size_t i = 0; i < burst; ++i) {
          const std::int64_t v = value(rng);
          t.record(v);
          ref.push_back(v);
          if (ref.size() > window) {
            ref.pop_front();
          }
        }
        ASSERT_EQ(t.count(), ref.size());
        for (double p : {0.0, 10.0, 50.0, 90.0, 99.0, 100.0}) {
          ASSERT_EQ(t.percentile(p), brute_percentile(ref, p))
              << "window " << window << " range " << range << " round " << round << " p" << p;
        }
        const double sum = std::accumulate(ref.begin(), ref.end(), 0.0);
        ASSERT_DOUBLE_EQ(t.mean(), ref.empty() ? 0.0 : sum / static_cast<double>(ref.size()));
      }
    }
  }
}

}  // namespace
}  // namespace conveyor
