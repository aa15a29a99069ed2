#pragma once
/// What a supervised worker is doing right now, written by the worker and read by its
/// supervisor: the attempt it works on and since when. When the worker crashes, the slot names
/// the sample it was working on (the culprit, which is charged a failure); when the attempt
/// runs past the hang deadline, the worker is declared hung. It also counts the attempts the
/// worker completed (progress: a worker that completes samples between crashes is restarted
/// at once, one that crashes before completing any is backed off) and names the last one (a
/// worker that takes its attempts in increasing order, as a reader does, has passed on every
/// attempt up to it). One slot per worker generation.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>

namespace conveyor {

class activity_slot {
 public:
  using clock = std::chrono::steady_clock;

  void begin(std::uint64_t attempt) noexcept {
    since_ns_.store(now_ns(), std::memory_order_relaxed);
    attempt_.store(attempt, std::memory_order_release);
  }
  void end() noexcept {
    last_done_.store(attempt_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    completed_.fetch_add(1, std::memory_order_relaxed);
    attempt_.store(0, std::memory_order_release);
  }

  /// Attempts completed (begun and ended without an exception) by this generation.
  std::uint64_t completed() const noexcept { return completed_.load(std::memory_order_acquire); }
  /// The last attempt completed; 0 when none was.
  std::uint64_t last_done() const noexcept { return last_done_.load(std::memory_order_acquire); }

  /// The attempt in hand; 0 when idle.
  std::uint64_t attempt() const noexcept { return attempt_.load(std::memory_order_acquire); }
  /// How long the attempt in hand has run; zero when idle.
  std::chrono::nanoseconds busy_for() const noexcept {
    if (attempt() == 0) {
      return std::chrono::nanoseconds{0};
    }
    return std::chrono::nanoseconds(now_ns() - since_ns_.load(std::memory_order_relaxed));
  }

  /// Set when the supervisor gave up on this generation (hung, or shutting down): injected
  /// delays end early and whatever the worker still sends is stale.
  void abandon() noexcept { abandoned_.store(true, std::memory_order_release); }
  bool abandoned() const noexcept { return abandoned_.load(std::memory_order_acquire); }

 private:
  static std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch())
        .count();
  }

  std::atomic<std::uint64_t> attempt_{0};
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<std::uint64_t> last_done_{0};
  std::atomic<std::int64_t> since_ns_{0};
  std::atomic<bool> abandoned_{false};
};

/// Marks `slot` busy with an attempt for the scope. When an exception leaves the scope (the
/// worker is crashing) the mark stays, so the supervisor learns which sample was in hand.
class activity_scope {
 public:
  activity_scope(activity_slot& slot, std::uint64_t attempt) noexcept
      : slot_(slot), exceptions_(std::uncaught_exceptions()) {
    slot_.begin(attempt);
  }
  ~activity_scope() {
    if (std::uncaught_exceptions() == exceptions_) {
      slot_.end();
    }
  }
  activity_scope(const activity_scope&) = delete;
  activity_scope& operator=(const activity_scope&) = delete;

 private:
  activity_slot& slot_;
  int exceptions_;
};

}  // namespace conveyor
