#pragma once
/// The hand-over from a feeder (an actor) to a trainer (a plain thread): a queue that the
/// feeder pushes to and the trainer blocks on. Credits bound its length, so push never
/// blocks. The channel also knows which buffers the trainer holds (popped and not yet given
/// back), so that a trainer holding all of them is told so instead of waiting for a batch
/// that cannot come.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>

#include "core/delivery/host_batch.hpp"

namespace conveyor {

/// Thread-safe: one or more producers, one or more consumers.
class batch_channel {
 public:
  using item = std::shared_ptr<const host_batch>;
  using clock = std::chrono::steady_clock;

  /// `buffers`: the feeder's ring size (0: unknown, then all_held is never reported).
  explicit batch_channel(std::size_t buffers = 0) : buffers_(buffers) {}

  /// Why pop_until() returned.
  enum class outcome : std::uint8_t {
    ready,      ///< a batch: its buffer now counts as held by the trainer
    closed,     ///< closed and drained
    all_held,   ///< the trainer holds every buffer: nothing can arrive until one comes back
    timed_out,  ///< nothing came before the deadline
  };
  struct popped {
    item batch;  ///< set only when status == ready
    outcome status = outcome::closed;
  };

  void push(item batch);
  /// Waits until a batch is there, the channel is closed and drained, the trainer holds every
  /// buffer, or `deadline` passes, whichever comes first.
  popped pop_until(clock::time_point deadline);
  /// Waits without a deadline (in-process harnesses that always give batches back): the batch,
  /// or nullptr once closed and drained or when the trainer holds every buffer.
  item pop();
  /// The trainer gave buffer `slot` back: true when it held it (the feeder must be told), false
  /// for a second release of the same buffer or one the channel never handed out.
  bool give_back(std::uint64_t slot);
  /// Buffers the trainer holds now.
  std::size_t held() const;
  /// Wakes every waiter; pushes after close are dropped.
  void close();
  bool closed() const;
  std::size_t size() const;
  /// How long pop_until() and pop() have waited for a batch so far, over every caller, the
  /// waits still going on included up to now: the trainers' wait (the node's live diagnosis
  /// reads it interval by interval, so a long wait counts in the intervals it spans).
  std::chrono::nanoseconds waited() const;

 private:
  bool all_held_locked() const { return buffers_ > 0 && held_.size() >= buffers_; }
  bool settled_locked() const { return !queue_.empty() || closed_ || all_held_locked(); }
  /// Precondition: settled_locked().
  popped take_locked();
  /// Waits with `wait(lock, predicate)` until settled (true) or not (false), counting the
  /// time in waited_.
  template <class Wait>
  bool wait_settled(std::unique_lock<std::mutex>& lock, Wait wait);

  const std::size_t buffers_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<item> queue_;
  std::set<std::uint64_t> held_;
  bool closed_ = false;
  std::chrono::nanoseconds waited_{0};  ///< by the waits that ended
  std::size_t waiting_ = 0;             ///< callers waiting now
  clock::duration waiting_since_{0};    ///< the sum of their waits' starts (since the epoch)
};

}  // namespace conveyor
