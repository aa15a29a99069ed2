#include "core/feeding/completion_queue.hpp"

#include <algorithm>

namespace conveyor {
namespace {

// How long the thread waits on the engine at a time before it looks at stop() again.
constexpr std::chrono::milliseconds polling_interval{10};

std::string seconds_text(std::chrono::milliseconds d) {
  return std::to_string(std::chrono::duration<double>(d).count());
}

}  // namespace

completion_queue::completion_queue(copy_engine& engine, failure_handler on_failure)
    : engine_(engine), on_failure_(std::move(on_failure)) {}

completion_queue::~completion_queue() {
  stop();
}

void completion_queue::push(entry e) {
  e.deadline = copy_engine::clock::now() + e.timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopping_ || failed_) {
    return;
  }
  if (queue_.empty()) {
    // Nothing before it: hand it over now if its work is complete already (an inline engine).
    lock.unlock();
    auto complete = engine_.query(*e.done);
    if (!complete) {
      fail(e, complete.error());
      return;
    }
    if (*complete) {
      e.on_ready();
      return;
    }
    lock.lock();
  }
  queue_.push_back(std::move(e));
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { loop(); });
  }
  changed_.notify_all();
}

void completion_queue::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  // Dropped outside the lock: the handlers may own the last references to what owns us.
  std::deque<entry> dropped;
  failure_handler handler;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped.swap(queue_);
    handler.swap(on_failure_);
  }
}

std::size_t completion_queue::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void completion_queue::fail(const entry& e, const error& why) {
  failure_handler handler;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_) {
      return;
    }
    failed_ = true;
    handler = on_failure_;
  }
  if (handler) {
    handler(e, why);
  }
}

bool completion_queue::settle_front(const entry& e) {
  const auto now = copy_engine::clock::now();
  auto complete = engine_.wait_until(*e.done, std::min(e.deadline, now + polling_interval));
  if (!complete) {
    fail(e, complete.error());
    return true;
  }
  if (*complete) {
    e.on_ready();
    return true;
  }
  if (copy_engine::clock::now() >= e.deadline) {
    fail(e, error{errc::timed_out, "not complete on the " + engine_.name() + " within " +
                                       seconds_text(e.timeout) +
                                       " s of its submission (a stalled copy or kernel)"});
    return true;
  }
  return false;
}

void completion_queue::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) {
      return;
    }
    const entry& front = queue_.front();  // only this thread pops, so the reference holds
    lock.unlock();
    const bool settled = settle_front(front);
    lock.lock();
    if (failed_) {
      queue_.clear();
    } else if (settled) {
      queue_.pop_front();
    }
  }
}

}  // namespace conveyor
