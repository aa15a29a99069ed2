// rate_meter over constructed timelines: the clock is a parameter, so no test sleeps and every
// expected rate is exact.
#include <gtest/gtest.h>

#include "core/metrics/rate_meter.hpp"

namespace conveyor {
namespace {

using namespace std::chrono_literals;
using time_point = rate_meter::clock::time_point;

// A bucket-aligned origin (1000 s after the clock's epoch), so bucket k spans t0+k .. t0+k+1 s.
const time_point t0 = time_point{} + 1000s;

TEST(RateMeter, EmptyReadsZero) {
  rate_meter m;
  EXPECT_EQ(m.rate(t0), 0.0);
  EXPECT_EQ(m.rate(t0 + 1h), 0.0);
  EXPECT_EQ(m.window_count(t0), 0u);
  EXPECT_EQ(m.total(), 0u);
  EXPECT_EQ(m.window(), 5s);
  EXPECT_EQ(m.bucket_width(), 1s);
}

// 100 items in the middle of every second from t0 to t0 + 9.5 s.
rate_meter steady_hundred_per_second() {
  rate_meter m(1s, 5);
  for (int k = 0; k < 10; ++k) {
    m.add(t0 + std::chrono::seconds(k) + 500ms, 100);
  }
  return m;
}

TEST(RateMeter, SteadyTrafficReadsItsRate) {
  rate_meter m = steady_hundred_per_second();
  EXPECT_EQ(m.total(), 1000u);
  // Window = buckets t0+6 .. t0+10; the current one (t0+10) is empty and has just begun.
  EXPECT_EQ(m.window_count(t0 + 10s), 400u);
  EXPECT_DOUBLE_EQ(m.rate(t0 + 10s), 100.0);
  // Mid-bucket, right after the add of t0+9.5: buckets t0+5 .. t0+9 over 4.5 s.
  EXPECT_EQ(m.window_count(t0 + 9500ms), 500u);
  EXPECT_DOUBLE_EQ(m.rate(t0 + 9500ms), 500.0 / 4.5);
}

TEST(RateMeter, IdleTimeDecaysTheRateToZero) {
  rate_meter m = steady_hundred_per_second();
  EXPECT_DOUBLE_EQ(m.rate(t0 + 11s), 300.0 / 4.0);  // t0+7 .. t0+9 hold 300
  EXPECT_DOUBLE_EQ(m.rate(t0 + 12s), 200.0 / 4.0);
  EXPECT_DOUBLE_EQ(m.rate(t0 + 13s), 100.0 / 4.0);
  EXPECT_EQ(m.rate(t0 + 14s), 0.0);  // the last add (t0+9.5) has left the window
  EXPECT_EQ(m.rate(t0 + 1h), 0.0);
  EXPECT_EQ(m.window_count(t0 + 14s), 0u);
  EXPECT_EQ(m.total(), 1000u);  // the total never decays
}

TEST(RateMeter, TrafficAfterAnIdlePeriodReusesTheBuckets) {
  rate_meter m = steady_hundred_per_second();
  m.add(t0 + 30s, 10);  // lands in the slot that held t0+5
  EXPECT_EQ(m.window_count(t0 + 30s), 10u);
  EXPECT_EQ(m.window_count(t0 + 34s), 10u);
  EXPECT_DOUBLE_EQ(m.rate(t0 + 34s), 10.0 / 4.0);
  EXPECT_EQ(m.window_count(t0 + 35s), 0u);
  EXPECT_EQ(m.total(), 1010u);
}

TEST(RateMeter, EarlyRatesUseTheTimeSinceTheFirstAdd) {
  rate_meter m(1s, 5);
  m.add(t0 + 250ms, 50);
  // Less than a bucket width since the first add: counted as one width, not as 0.25 s.
  EXPECT_DOUBLE_EQ(m.rate(t0 + 500ms), 50.0);
  EXPECT_DOUBLE_EQ(m.rate(t0 + 1250ms), 50.0);
  EXPECT_DOUBLE_EQ(m.rate(t0 + 2250ms), 25.0);  // 50 items over 2 s
  m.add(t0 + 2250ms, 150);
  EXPECT_DOUBLE_EQ(m.rate(t0 + 4250ms), 50.0);  // 200 items over 4 s
  // From t0+5 on the window (now's bucket - 4 .. now) starts after the first add, and the
  // bucket of t0 with its 50 items has left it.
  EXPECT_DOUBLE_EQ(m.rate(t0 + 5s), 150.0 / 4.0);
  EXPECT_EQ(m.rate(t0 + 7s), 0.0);
}

TEST(RateMeter, BurstAtOneInstant) {
  rate_meter m(1s, 5);
  m.add(t0, 1000);
  EXPECT_DOUBLE_EQ(m.rate(t0), 1000.0);
  EXPECT_DOUBLE_EQ(m.rate(t0 + 1s), 1000.0);
  EXPECT_DOUBLE_EQ(m.rate(t0 + 4s), 250.0);
  EXPECT_EQ(m.rate(t0 + 5s), 0.0);
}

TEST(RateMeter, FineBuckets) {
  rate_meter m(100ms, 10);  // a one-second window
  EXPECT_EQ(m.window(), 1s);
  for (int k = 0; k < 30; ++k) {  // 3 s of 20 items per 100 ms: 200 items/s
    m.add(t0 + k * 100ms, 20);
  }
  // At t0+3 s the window is t0+2.1 .. t0+3.0: nine full buckets over 0.9 s.
  EXPECT_EQ(m.window_count(t0 + 3s), 180u);
  EXPECT_DOUBLE_EQ(m.rate(t0 + 3s), 200.0);
  EXPECT_EQ(m.total(), 600u);
}

TEST(RateMeter, SingleItemsAddUp) {
  rate_meter m(1s, 2);
  for (int i = 0; i < 7; ++i) {
    m.add(t0 + 1s + std::chrono::milliseconds(i * 100));
  }
  EXPECT_EQ(m.total(), 7u);
  EXPECT_EQ(m.window_count(t0 + 2s), 7u);
  EXPECT_DOUBLE_EQ(m.rate(t0 + 2s), 7.0);  // window t0+1 .. t0+2, first add at t0+1
}

TEST(RateMeter, AddsOlderThanTheWindowCountOnlyTowardTheTotal) {
  rate_meter m(1s, 3);
  m.add(t0 + 10s, 5);
  m.add(t0 + 7s, 100);  // shares the slot of t0+10 and is older than its window
  EXPECT_EQ(m.total(), 105u);
  EXPECT_EQ(m.window_count(t0 + 10s), 5u);
  m.add(t0 + 9s, 3);  // late, but still inside the window
  EXPECT_EQ(m.window_count(t0 + 10s), 8u);
}

TEST(RateMeter, TimelinesAcrossTheClockEpoch) {
  rate_meter m(1s, 2);
  const time_point zero{};
  m.add(zero - 500ms, 4);  // bucket -1
  m.add(zero + 500ms, 6);  // bucket 0
  EXPECT_EQ(m.window_count(zero + 500ms), 10u);
  EXPECT_EQ(m.window_count(zero + 1s), 6u);  // buckets 0 and 1
  EXPECT_DOUBLE_EQ(m.rate(zero + 1s), 6.0);
}

TEST(RateMeter, DegenerateSettingsAreRaised) {
  rate_meter m(0s, 0);
  EXPECT_EQ(m.bucket_width(), rate_meter::clock::duration(1));
  EXPECT_EQ(m.window(), rate_meter::clock::duration(1));
  m.add(t0, 3);
  EXPECT_EQ(m.window_count(t0), 3u);
  EXPECT_EQ(m.total(), 3u);
}

}  // namespace
}  // namespace conveyor
