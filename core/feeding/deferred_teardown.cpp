#include "core/feeding/deferred_teardown.hpp"

#include <condition_variable>
#include <list>
#include <mutex>
#include <thread>

#include "core/base/deliberate_leak.hpp"
#include "core/base/log.hpp"

namespace conveyor {
namespace {

constexpr std::chrono::milliseconds polling_interval{1};

class teardown_thread {
 public:
  ~teardown_thread() {
    std::list<deferred_teardown> left;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      left.swap(pending_);
    }
    changed_.notify_all();
    if (thread_.joinable()) {
      thread_.join();
    }
    // The process is ending: the device's work may still run, and the CUDA runtime may be
    // gone already. Nothing is freed.
    for (auto& t : left) {
      leak_for_ever(std::move(t));
    }
  }

  void push(deferred_teardown t) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) {
        leak_for_ever(std::move(t));
        return;
      }
      pending_.push_back(std::move(t));
      if (!thread_.joinable()) {
        thread_ = std::thread([this] { loop(); });
      }
    }
    changed_.notify_all();
  }

  bool wait_idle(deferred_teardown::clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    return idle_.wait_until(lock, deadline, [&] { return pending_.empty() && !polling_; });
  }

 private:
  /// Settles what can be settled now: entries that completed or failed leave `pending_`.
  void poll_once(std::unique_lock<std::mutex>& lock) {
    std::list<deferred_teardown> round;
    round.swap(pending_);
    polling_ = true;
    lock.unlock();
    std::list<deferred_teardown> unsettled;
    for (auto it = round.begin(); it != round.end();) {
      auto next = std::next(it);
      if (!settle(*it)) {
        unsettled.splice(unsettled.end(), round, it);
      }
      it = next;
    }
    round.clear();  // the settled ones' resources go here, outside the lock
    lock.lock();
    pending_.splice(pending_.begin(), unsettled);
    polling_ = false;
  }

  /// True when `t` is done with: its work completed, or it was given up and leaked.
  static bool settle(deferred_teardown& t) {
    auto done = t.settled();
    if (done && *done) {
      return true;
    }
    if (done && deferred_teardown::clock::now() < t.deadline) {
      return false;
    }
    log("feeder")->error(
        "cannot tell that the work on {} completed ({}): its memory is leaked rather than "
        "freed under running work",
        t.what, done ? "the deadline passed" : done.error().what());
    t.leak();
    return true;
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (stopping_) {
        return;
      }
      poll_once(lock);
      if (pending_.empty()) {
        idle_.notify_all();
      } else {
        changed_.wait_for(lock, polling_interval, [&] { return stopping_; });
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::condition_variable idle_;
  std::list<deferred_teardown> pending_;
  bool polling_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

teardown_thread& the_thread() {
  static teardown_thread t;
  return t;
}

}  // namespace

void defer_teardown(deferred_teardown t) {
  the_thread().push(std::move(t));
}

bool wait_for_teardowns(deferred_teardown::clock::time_point deadline) {
  return the_thread().wait_idle(deadline);
}

}  // namespace conveyor
