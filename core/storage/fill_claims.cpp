#include "core/storage/fill_claims.hpp"

#include <utility>

namespace conveyor {

fill_claims::claim::claim(claim&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), id_(other.id_) {}

fill_claims::claim& fill_claims::claim::operator=(claim&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

fill_claims::claim::~claim() {
  release();
}

void fill_claims::claim::release() noexcept {
  if (auto* owner = std::exchange(owner_, nullptr)) {
    owner->release(id_);
  }
}

fill_claims::claim fill_claims::take(std::uint64_t id, clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  ++waiting_;
  const bool free = released_.wait_until(lock, deadline, [&] { return held_.count(id) == 0; });
  --waiting_;
  if (!free) {
    return {};
  }
  held_.insert(id);
  return {this, id};
}

std::size_t fill_claims::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waiting_;
}

void fill_claims::release(std::uint64_t id) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    held_.erase(id);
  }
  released_.notify_all();
}

}  // namespace conveyor
