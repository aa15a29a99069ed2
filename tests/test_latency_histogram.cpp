// The buckets of core/metrics/latency_histogram.hpp: each observation in the first bucket whose
// bound it does not pass, the last above every bound, the sum in nanoseconds.
#include <gtest/gtest.h>

#include <numeric>

#include "core/metrics/latency_histogram.hpp"

namespace conveyor {
namespace {

TEST(LatencyHistogram, EachObservationInTheFirstBucketItFitsUnder) {
  latency_histogram h;
  h.record(0);               // bucket 0 (<= 100 us)
  h.record(100'000);         // on the bound: bucket 0
  h.record(100'001);         // bucket 1 (<= 250 us)
  h.record(3'000'000);       // bucket 5 (<= 5 ms)
  h.record(10'000'000'000);  // the last bound: bucket 15
  h.record(10'000'000'001);  // above every bound: bucket 16
  h.record(-5);              // a clock step back: bucket 0, nothing added to the sum
  const auto& c = h.counts();
  EXPECT_EQ(c[0], 3u);
  EXPECT_EQ(c[1], 1u);
  EXPECT_EQ(c[5], 1u);
  EXPECT_EQ(c[15], 1u);
  EXPECT_EQ(c[16], 1u);
  EXPECT_EQ(std::accumulate(c.begin(), c.end(), std::uint64_t{0}), 7u);
  EXPECT_EQ(h.sum_ns(), 100'000 + 100'001 + 3'000'000 + 10'000'000'000 + 10'000'000'001);
}

TEST(LatencyHistogram, TheBoundsRise) {
  for (std::size_t i = 1; i < latency_histogram::bounds_ns.size(); ++i) {
    EXPECT_LT(latency_histogram::bounds_ns[i - 1], latency_histogram::bounds_ns[i]);
  }
  EXPECT_EQ(latency_histogram::buckets, latency_histogram::bounds_ns.size() + 1);
}

}  // namespace
}  // namespace conveyor
