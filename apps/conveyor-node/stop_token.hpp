#pragma once
/// A stop request shared by the node's threads: the signal watcher requests it, the trainers
/// check it between batches and wake from their simulated step as soon as it comes.
/// Thread-safe.

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace conveyor {

class stop_token {
 public:
  void request() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      requested_ = true;
    }
    wake_.notify_all();
  }
  bool requested() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requested_;
  }
  /// Waits until a stop is requested. conveyor-node always requests one when its run ends, so
  /// this wait is bounded by the run.
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [this] { return requested_; });
  }
  /// Waits `d` or until a stop is requested, whichever comes first; true when stopped.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> d) {
    std::unique_lock<std::mutex> lock(mutex_);
    return wake_.wait_for(lock, d, [this] { return requested_; });
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool requested_ = false;
};

}  // namespace conveyor
