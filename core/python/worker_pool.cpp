#include "core/python/worker_pool.hpp"

#include <utility>

namespace conveyor {

worker_lease::worker_lease(std::shared_ptr<worker_pool> pool, worker_process worker) noexcept
    : pool_(std::move(pool)), worker_(std::move(worker)) {}

worker_lease::~worker_lease() {
  if (pool_ && worker_) {
    pool_->give_back(std::move(*worker_));
  }
}

std::shared_ptr<worker_pool> worker_pool::make(worker_launch launch, std::size_t capacity) {
  return std::shared_ptr<worker_pool>(new worker_pool(std::move(launch), capacity));
}

worker_pool::worker_pool(worker_launch launch, std::size_t capacity)
    : launch_(std::move(launch)), capacity_(capacity) {
  idle_.reserve(capacity);  // give_back never allocates
  for (std::size_t i = capacity; i > 0; --i) {
    free_ids_.push_back(static_cast<std::uint32_t>(i - 1));  // the lowest id first
  }
}

expected<worker_lease> worker_pool::take() {
  std::uint32_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      auto w = std::move(idle_.back());
      idle_.pop_back();
      return worker_lease(shared_from_this(), std::move(w));
    }
    if (free_ids_.empty()) {
      return error{errc::resource_exhausted,
                   "all " + std::to_string(capacity_) + " Python workers are taken"};
    }
    id = free_ids_.back();
    free_ids_.pop_back();
    ++started_;
  }
  // Started outside the lock: a start takes seconds (an interpreter, imports, the dataset).
  auto w = worker_process::start(launch_, id);
  if (!w) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_ids_.push_back(id);
    return w.error();
  }
  return worker_lease(shared_from_this(), std::move(*w));
}

void worker_pool::give_back(worker_process w) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (w.alive()) {
    idle_.push_back(std::move(w));
  } else {
    free_ids_.push_back(w.id());
  }
}

worker_pool::~worker_pool() {
  for (auto& w : idle_) {
    w.request_stop();  // all at once: each then exits while the others are reaped
  }
}

std::uint64_t worker_pool::started() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return started_;
}

std::size_t worker_pool::live() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return capacity_ - free_ids_.size();
}

}  // namespace conveyor
