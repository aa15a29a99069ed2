#include "core/base/bounded_call.hpp"

#include <deque>
#include <system_error>
#include <thread>

#include "core/base/deliberate_leak.hpp"

namespace conveyor::detail {
namespace {

// How long a thread of the pool waits for a call before it ends.
constexpr std::chrono::seconds idle_life{10};

/// The pool: jobs queued, idle threads waiting for them. Never destroyed (its threads may be
/// blocked in a call when the process exits).
class blocking_pool {
 public:
  bool run(std::function<void()> job) {
    std::unique_lock<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(job));
    // Each queued job needs an idle thread of its own: one stuck call delays no other.
    if (jobs_.size() <= idle_ || threads_ >= max_blocking_threads) {
      work_.notify_one();
      return true;
    }
    try {
      std::thread([this] { serve(); }).detach();
      ++threads_;
    } catch (const std::system_error&) {
      if (threads_ == 0) {
        jobs_.pop_back();
        return false;
      }
    }
    return true;
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ++idle_;
      const bool got = work_.wait_for(lock, idle_life, [&] { return !jobs_.empty(); });
      --idle_;
      if (!got) {
        --threads_;
        return;
      }
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      job = nullptr;  // what it holds goes before the lock is taken again
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::function<void()>> jobs_;
  std::size_t threads_ = 0;
  std::size_t idle_ = 0;
};

blocking_pool& pool() {
  static blocking_pool* the_pool = [] {
    auto* p = new blocking_pool;  // NOLINT: never freed, see blocking_pool
    register_deliberate_leak(p);
    return p;
  }();
  return *the_pool;
}

}  // namespace

bool run_blocking(std::function<void()> job) {
  return pool().run(std::move(job));
}

}  // namespace conveyor::detail
