#pragma once
/// What the ring tests watch of a ring: the batches it handed over, in order, and how it
/// failed; and the small batch they feed it.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <vector>

#include "core/feeding/copy_engine.hpp"

namespace conveyor::testing {

/// What a ring handed over (in order) and how it failed, for the tests to wait on, each wait
/// bounded by a minute.
class ring_log {
 public:
  void handed_over(int batch) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      batches_.push_back(batch);
    }
    changed_.notify_all();
  }
  void failed(const error& e) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      failures_.push_back(e);
    }
    changed_.notify_all();
  }
  /// True once `n` batches were handed over.
  bool wait_for_batches(std::size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::minutes(1), [&] { return batches_.size() >= n; });
  }
  /// True once `n` batches were handed over; false as soon as the ring failed (or after a
  /// minute).
  bool wait_for_batches_unless_failed(std::size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, std::chrono::minutes(1),
                      [&] { return batches_.size() >= n || !failures_.empty(); });
    return batches_.size() >= n && failures_.empty();
  }
  /// The first failure, once there is one (nullopt after a minute without).
  std::optional<error> wait_for_failure() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, std::chrono::minutes(1), [&] { return !failures_.empty(); })) {
      return std::nullopt;
    }
    return failures_.front();
  }
  std::vector<int> batches() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return batches_;
  }
  std::size_t failures() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failures_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int> batches_;
  std::vector<error> failures_;
};

/// A small batch: 2 uint8 samples of 3 x 4 x 5.
inline batch_layout small_layout(int samples = 2) {
  return {static_cast<std::size_t>(samples) * 60, 0, {samples, 3, 4, 5, pixel_layout::chw}};
}

}  // namespace conveyor::testing
