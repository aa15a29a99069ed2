#pragma once
/// How fast one peer answers the fetches of a node, and when the node stops asking it for a
/// while. A peer that answers just under the fetch deadline costs every fetch nearly the whole
/// deadline (reading storage is faster), so it is rested like one that lets a fetch time out:
///
///  - `typical()` is an exponentially weighted moving average (weight 1/4) of its answer times,
///    from 0: three answers in a row near the deadline take it past half the deadline;
///  - the peer rests (is not asked) when an answer near the deadline (over half of it) leaves
///    its typical answer over half the deadline, and at once after a strike (a fetch that
///    timed out, or a record that did not match the dataset);
///  - each rest in a row is twice as long as the one before, from `rest` up to 32 x `rest`; an
///    answer that brings the typical time back under half the deadline ends the series;
///  - answers and strikes that arrive during a rest (fetches asked before it began) update
///    the typical time but begin no new rest.
///
/// Plain code with the time passed in (tests drive it with made-up time points).

#include <chrono>
#include <cstdint>

namespace conveyor {

/// Not thread-safe (peer_health serialises its calls).
class peer_pace {
 public:
  using clock = std::chrono::steady_clock;

  /// `deadline`: a fetch's (cluster.peer_timeout_ms); `rest`: the first rest
  /// (cluster.peer_retry_ms). Precondition: both > 0.
  peer_pace(std::chrono::milliseconds deadline, std::chrono::milliseconds rest);

  /// The peer answered a fetch (any answer) after `took`, at `now`.
  void answered(clock::duration took, clock::time_point now);
  /// A fetch from the peer failed at `now` in a way that counts against it: rests at once.
  void struck(clock::time_point now);

  /// The peer may be asked at `now` (it is not resting).
  bool ready(clock::time_point now) const noexcept { return now >= rest_until_; }
  clock::duration typical() const noexcept { return typical_; }
  /// Rests begun because answers were slow (not strikes), over the run.
  std::uint64_t slow_rests() const noexcept { return slow_rests_; }

 private:
  void rest(clock::time_point now);
  bool slow() const noexcept { return typical_ * 2 > deadline_; }

  clock::duration deadline_;
  clock::duration first_rest_;
  clock::duration next_rest_;
  clock::duration typical_{};
  clock::time_point rest_until_{};
  std::uint64_t slow_rests_ = 0;
};

}  // namespace conveyor
