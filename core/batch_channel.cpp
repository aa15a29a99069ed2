#include "core/batch_channel.hpp"

namespace conveyor {

void batch_channel::push(item batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) {
      return;
    }
    queue_.push_back(std::move(batch));
  }
  ready_.notify_one();
}

batch_channel::item batch_channel::take_front() {
  if (queue_.empty()) {
    return nullptr;
  }
  auto front = std::move(queue_.front());
  queue_.pop_front();
  return front;
}

batch_channel::item batch_channel::pop() {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait(lock, [this] { return closed_ || !queue_.empty(); });
  return take_front();
}

void batch_channel::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  ready_.notify_all();
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
