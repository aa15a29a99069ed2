#pragma once
/// Items per second over a sliding time window, for the monitor's rate figures. The clock is
/// injected: every call takes the current time, so tests build timelines without sleeping.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace conveyor {

/// Counts items in fixed time buckets (aligned to multiples of `bucket_width` on the
/// steady_clock) and keeps the last `buckets` of them, the current one included.
///
/// rate(now) = items in the buckets of the window / the time those buckets have covered, where
/// the window starts at the beginning of the oldest kept bucket (now's bucket - buckets + 1),
/// or at the first add() when that is later, and ends at `now`. The covered time is counted as
/// at least one bucket width, so a burst right after the first add() does not read as an
/// enormous rate. Steady traffic of r items/s therefore reads r; after `buckets` whole buckets
/// with no add() the rate is 0. Before the first add() it is 0.
///
/// Times passed in must not go backwards by more than the window: an add() older than the
/// window counts toward total() only. Cost: add() O(1), rate() O(buckets).
///
/// Single-threaded: owned by one actor (or one thread); no member may be called concurrently
/// with add().
class rate_meter {
 public:
  using clock = std::chrono::steady_clock;

  /// A window of `buckets` buckets of `bucket_width` each (default: 5 x 1 s). A width below
  /// 1 ns is taken as 1 ns, 0 buckets as 1.
  explicit rate_meter(clock::duration bucket_width = std::chrono::seconds(1),
                      std::size_t buckets = 5);

  /// Counts `n` items at time `now`.
  void add(clock::time_point now, std::uint64_t n = 1) noexcept;
  /// Items per second over the window ending at `now` (see the class comment).
  double rate(clock::time_point now) const noexcept;
  /// Items in the window ending at `now`.
  std::uint64_t window_count(clock::time_point now) const noexcept;
  /// Items ever added, however old.
  std::uint64_t total() const noexcept { return total_; }

  clock::duration bucket_width() const noexcept { return width_; }
  /// The length of the window: bucket_width() * buckets.
  clock::duration window() const noexcept;

 private:
  struct bucket {
    // which bucket of time it holds (time / width, floored); none yet at first
    std::int64_t index = std::numeric_limits<std::int64_t>::min();
    std::uint64_t count = 0;
  };

  std::int64_t index_of(clock::time_point t) const noexcept;
  std::int64_t oldest_index(clock::time_point now) const noexcept;

  clock::duration width_;
  std::vector<bucket> buckets_;  // bucket i lives in slot i mod size
  std::uint64_t total_ = 0;
  bool started_ = false;
  clock::time_point first_add_{};
};

}  // namespace conveyor
