#pragma once
/// Counts of latencies in fixed buckets since an actor started (Prometheus' histogram, which
/// `conveyor_actor_item_duration_seconds` exposes on /metrics): unlike the sliding percentiles
/// of latency_tracker, they add up across actors and scrapes.

#include <array>
#include <cstddef>
#include <cstdint>

namespace conveyor {

/// Single-threaded (owned by one actor).
class latency_histogram {
 public:
  /// Upper bounds of the buckets, in nanoseconds: 100 us to 10 s, 1 / 2.5 / 5 per decade. One
  /// bucket more (above every bound) follows the last.
  static constexpr std::array<std::int64_t, 16> bounds_ns = {
      100'000,       250'000,       500'000,       1'000'000,     2'500'000,   5'000'000,
      10'000'000,    25'000'000,    50'000'000,    100'000'000,   250'000'000, 500'000'000,
      1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};
  static constexpr std::size_t buckets = bounds_ns.size() + 1;

  /// One observation (a negative one counts in the first bucket, and adds 0 to the sum).
  void record(std::int64_t ns) noexcept;
  /// Observations per bucket (not cumulative): counts()[i] those <= bounds_ns[i] and above the
  /// bound before; the last, those above every bound.
  const std::array<std::uint64_t, buckets>& counts() const noexcept { return counts_; }
  std::int64_t sum_ns() const noexcept { return sum_ns_; }

 private:
  std::array<std::uint64_t, buckets> counts_{};
  std::int64_t sum_ns_ = 0;
};

}  // namespace conveyor
