#pragma once
/// How long the credit window has been full: the time in which the batcher could dispatch no
/// other sample because every credit was held by a sample in flight. A point sample of the
/// samples in flight says little (the window empties and fills within a batch); the time full
/// tells a window that holds the pool back (preprocessors idle while one slow sample keeps
/// the oldest batch open) from a pool that is simply busy. The batcher tells it the samples in
/// flight whenever they change; the live diagnosis reads the total, interval by interval.

#include <cstdint>

namespace conveyor {

/// The window's time full up to a moment, as the batcher last published it.
struct window_time {
  std::uint64_t full_ns = 0;        ///< full this long up to the publish
  std::uint64_t full_since_ns = 0;  ///< full from this monotonic_ns() on; 0: not full then

  bool operator==(const window_time& o) const noexcept {
    return full_ns == o.full_ns && full_since_ns == o.full_since_ns;
  }

  /// Nanoseconds full up to `now_ns` (a monotonic_ns() reading at or after the publish).
  std::uint64_t full_until(std::uint64_t now_ns) const noexcept {
    return full_ns + (full_since_ns != 0 && now_ns > full_since_ns ? now_ns - full_since_ns : 0);
  }
};

/// Plain code; one thread (the batcher's).
class window_occupancy {
 public:
  /// A window of `window` samples (>= 1), not full.
  explicit window_occupancy(std::uint64_t window) noexcept : window_(window) {}

  /// `in_flight` samples are in flight from `now_ns` (monotonic_ns()) on.
  void update(std::uint64_t in_flight, std::uint64_t now_ns) noexcept;
  /// The window is `window` samples (>= 1) from `now_ns` on, with `in_flight` in flight.
  void resize(std::uint64_t window, std::uint64_t in_flight, std::uint64_t now_ns) noexcept;
  /// The time full so far, and since when it is full now (window_time::full_until extrapolates
  /// it to a later moment).
  window_time time() const noexcept { return {full_ns_, full_since_}; }

 private:
  std::uint64_t window_;
  std::uint64_t full_ns_ = 0;     ///< over the spells that ended
  std::uint64_t full_since_ = 0;  ///< the current spell's start; 0: not full
};

}  // namespace conveyor
