#include "core/delivery/batch_channel.hpp"

namespace conveyor {

void batch_channel::push(item batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) {
      return;
    }
    queue_.push_back(std::move(batch));
  }
  changed_.notify_all();
}

template <class Wait>
bool batch_channel::wait_settled(std::unique_lock<std::mutex>& lock, Wait wait) {
  if (settled_locked()) {
    return true;
  }
  const auto start = clock::now();
  ++waiting_;
  waiting_since_ += start.time_since_epoch();
  const bool settled = wait(lock, [this] { return settled_locked(); });
  --waiting_;
  waiting_since_ -= start.time_since_epoch();
  waited_ += clock::now() - start;
  return settled;
}

batch_channel::popped batch_channel::pop_until(clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto until_deadline = [&](auto& l, auto settled) {
    return changed_.wait_until(l, deadline, settled);
  };
  if (!wait_settled(lock, until_deadline)) {
    return {nullptr, outcome::timed_out};
  }
  return take_locked();
}

batch_channel::item batch_channel::pop() {
  std::unique_lock<std::mutex> lock(mutex_);
  wait_settled(lock, [&](auto& l, auto settled) {
    changed_.wait(l, settled);
    return true;
  });
  return take_locked().batch;
}

std::chrono::nanoseconds batch_channel::waited() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto ongoing =
      clock::now().time_since_epoch() * static_cast<clock::rep>(waiting_) - waiting_since_;
  return waited_ + std::chrono::duration_cast<std::chrono::nanoseconds>(ongoing);
}

batch_channel::popped batch_channel::take_locked() {
  if (queue_.empty()) {
    return {nullptr, closed_ ? outcome::closed : outcome::all_held};
  }
  held_.insert(queue_.front()->slot);  // first: if it throws, the batch is still queued
  auto front = std::move(queue_.front());
  queue_.pop_front();
  return {std::move(front), outcome::ready};
}

bool batch_channel::give_back(std::uint64_t slot) {
  bool was_held = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    was_held = held_.erase(slot) > 0;
  }
  changed_.notify_all();
  return was_held;
}

std::size_t batch_channel::held() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_.size();
}

void batch_channel::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

bool batch_channel::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

std::size_t batch_channel::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

}  // namespace conveyor
