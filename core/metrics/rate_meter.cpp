#include "core/metrics/rate_meter.hpp"

#include <algorithm>

namespace conveyor {

namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

std::size_t slot_of(std::int64_t index, std::size_t slots) {
  const auto n = static_cast<std::int64_t>(slots);
  return static_cast<std::size_t>(((index % n) + n) % n);
}

}  // namespace

rate_meter::rate_meter(clock::duration bucket_width, std::size_t buckets)
    : width_(std::max(bucket_width, clock::duration(1))),
      buckets_(std::max<std::size_t>(buckets, 1)) {}

void rate_meter::add(clock::time_point now, std::uint64_t n) noexcept {
  total_ += n;
  if (!started_) {
    started_ = true;
    first_add_ = now;
  }
  const std::int64_t index = index_of(now);
  bucket& b = buckets_[slot_of(index, buckets_.size())];
  if (b.index > index) {
    return;  // the slot already holds a later bucket: `now` is older than the window
  }
  if (b.index < index) {
    b = bucket{index, 0};
  }
  b.count += n;
}

std::uint64_t rate_meter::window_count(clock::time_point now) const noexcept {
  const std::int64_t newest = index_of(now);
  const std::int64_t oldest = oldest_index(now);
  std::uint64_t sum = 0;
  for (const bucket& b : buckets_) {
    if (b.index >= oldest && b.index <= newest) {
      sum += b.count;
    }
  }
  return sum;
}

double rate_meter::rate(clock::time_point now) const noexcept {
  if (!started_) {
    return 0.0;
  }
  const clock::time_point window_start{width_ * oldest_index(now)};
  const clock::duration covered = std::max(now - std::max(window_start, first_add_), width_);
  return static_cast<double>(window_count(now)) / std::chrono::duration<double>(covered).count();
}

rate_meter::clock::duration rate_meter::window() const noexcept {
  return width_ * static_cast<clock::rep>(buckets_.size());
}

std::int64_t rate_meter::index_of(clock::time_point t) const noexcept {
  return floor_div(t.time_since_epoch().count(), width_.count());
}

std::int64_t rate_meter::oldest_index(clock::time_point now) const noexcept {
  return index_of(now) - static_cast<std::int64_t>(buckets_.size()) + 1;
}

}  // namespace conveyor
