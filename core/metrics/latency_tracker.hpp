#pragma once
/// Latency percentiles over a sliding window of the last N observations. Every actor's monitor
/// reports them, and the latency-aware batcher sets each sample's budget from one of them, so
/// recording is O(1) and a query right after a record is cheap too (see latency_tracker).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace conveyor {

/// The figures of one log line. All latencies are in nanoseconds; every field is an integer so
/// the struct can travel in a message as it is (CAF 0.17 corrupts floats on the wire).
struct latency_snapshot {
  std::uint64_t count = 0;  ///< observations in the window
  std::int64_t p50 = 0;
  std::int64_t p90 = 0;
  std::int64_t p95 = 0;
  std::int64_t p99 = 0;
  std::int64_t max = 0;
  std::int64_t mean = 0;  ///< rounded to the nearest nanosecond
};

/// Latencies (int64 nanoseconds) of the last `window` observations, with percentiles by the
/// nearest-rank method: percentile(p) is the smallest recorded value such that at least p % of
/// the window is <= it, i.e. the value of rank ceil(p / 100 * count) (1-based, at least 1) in
/// ascending order. So it is always a value that was actually observed, percentile(0) is the
/// minimum and percentile(100) the maximum; over 1..100 ms, p50 = 50 ms, p90 = 90 ms,
/// p99 = 99 ms. An empty tracker answers 0 to every query.
///
/// Cost: record() is O(1) (a ring buffer plus a note of the change). Queries that need the order
/// (percentile, min, max, snapshot) keep a sorted copy of the window and repair it lazily: after
/// k records it takes k binary searches and shifts (O(k * N) bytes moved, a few hundred ns each
/// at N = 8192), and once k passes a limit (N / 8) it sorts a fresh copy instead. Further
/// queries with no record in between only index the sorted copy.
///
/// Single-threaded: owned by one actor (or one thread). No member, not even a query, may be
/// called concurrently with any other; the order queries are non-const because they repair the
/// sorted copy.
class latency_tracker {
 public:
  static constexpr std::size_t default_window = 1024;

  /// `window` is the number of most recent observations kept; 0 is taken as 1.
  explicit latency_tracker(std::size_t window = default_window);

  /// Adds one observation, evicting the oldest when the window is full. Negative values are
  /// kept as given. The sum of the window must fit in int64 (N = 8192 allows ~13 days each).
  void record(std::int64_t latency_ns) noexcept;
  void record(std::chrono::nanoseconds latency) noexcept { record(latency.count()); }

  /// The nearest-rank p-th percentile of the window, p in [0, 100] (clamped; NaN reads as 0).
  std::int64_t percentile(double p);
  std::int64_t min() { return percentile(0.0); }
  std::int64_t max() { return percentile(100.0); }
  /// count, p50, p90, p95, p99, max and mean of the window in one call.
  latency_snapshot snapshot();

  /// Observations in the window (at most window()).
  std::size_t count() const noexcept { return size_; }
  std::size_t window() const noexcept { return ring_.size(); }
  /// Observations ever recorded (since construction or clear()), evicted ones included.
  std::uint64_t total_recorded() const noexcept { return total_; }
  /// Arithmetic mean of the window in nanoseconds; 0 when empty.
  double mean() const noexcept;

  /// Forgets every observation; the window size stays.
  void clear() noexcept;

 private:
  // One record() not yet applied to sorted_: `added` entered, `removed` left if `evicts`.
  struct change {
    std::int64_t added;
    std::int64_t removed;
    bool evicts;
  };

  void sync_sorted();
  void rebuild_sorted();
  void insert_sorted(std::int64_t value);
  void replace_sorted(std::int64_t removed, std::int64_t added);

  std::vector<std::int64_t> ring_;  // capacity = window; the first size_ slots are in use
  std::size_t head_ = 0;            // the oldest slot once full (the next to overwrite)
  std::size_t size_ = 0;
  std::int64_t sum_ = 0;
  std::uint64_t total_ = 0;

  std::vector<std::int64_t> sorted_;  // the window in ascending order, as of the last sync
  std::vector<change> pending_;       // records since then; capacity fixed at pending_limit_
  std::size_t pending_limit_;
  bool rebuild_ = false;  // too many records since the last sync: sort a fresh copy instead
};

}  // namespace conveyor
