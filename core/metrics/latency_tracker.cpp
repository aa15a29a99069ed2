#include "core/metrics/latency_tracker.hpp"

#include <algorithm>
#include <cmath>

namespace conveyor {

namespace {

// Past this many unapplied records, sorting a fresh copy (N log N) beats repairing the sorted
// copy one change at a time (~N / 3 elements shifted per change); measured in
// bench_latency_tracker (record_burst_then_p90).
std::size_t pending_limit_for(std::size_t window) {
  return std::max<std::size_t>(16, window / 8);
}

// 1-based nearest rank of the p-th percentile among n > 0 values.
std::size_t nearest_rank(double p, std::size_t n) {
  if (!(p > 0.0)) {
    return 1;  // also NaN
  }
  if (p >= 100.0) {
    return n;
  }
  const double exact = p / 100.0 * static_cast<double>(n);
  // Shave the rounding error of the product, so that e.g. p = 99.9 of 1000 is rank 999, not 1000.
  const double rank = std::ceil(exact * (1.0 - 1e-12));
  return std::clamp<std::size_t>(static_cast<std::size_t>(rank), 1, n);
}

}  // namespace

latency_tracker::latency_tracker(std::size_t window)
    : ring_(std::max<std::size_t>(window, 1)), pending_limit_(pending_limit_for(ring_.size())) {
  sorted_.reserve(ring_.size());
  pending_.reserve(pending_limit_);
}

void latency_tracker::record(std::int64_t latency_ns) noexcept {
  change c{latency_ns, 0, false};
  if (size_ < ring_.size()) {
    ring_[size_++] = latency_ns;
  } else {
    c.removed = ring_[head_];
    c.evicts = true;
    ring_[head_] = latency_ns;
    head_ = head_ + 1 == ring_.size() ? 0 : head_ + 1;
    sum_ -= c.removed;
  }
  sum_ += latency_ns;
  ++total_;
  if (rebuild_) {
    return;
  }
  if (pending_.size() < pending_limit_) {
    pending_.push_back(c);  // within the reserved capacity: never allocates
  } else {
    rebuild_ = true;
    pending_.clear();
  }
}

std::int64_t latency_tracker::percentile(double p) {
  if (size_ == 0) {
    return 0;
  }
  sync_sorted();
  return sorted_[nearest_rank(p, size_) - 1];
}

latency_snapshot latency_tracker::snapshot() {
  latency_snapshot s;
  s.count = size_;
  s.p50 = percentile(50.0);
  s.p90 = percentile(90.0);
  s.p95 = percentile(95.0);
  s.p99 = percentile(99.0);
  s.max = max();
  s.mean = std::llround(mean());
  return s;
}

double latency_tracker::mean() const noexcept {
  return size_ == 0 ? 0.0 : static_cast<double>(sum_) / static_cast<double>(size_);
}

void latency_tracker::clear() noexcept {
  head_ = 0;
  size_ = 0;
  sum_ = 0;
  total_ = 0;
  sorted_.clear();
  pending_.clear();
  rebuild_ = false;
}

void latency_tracker::sync_sorted() {
  if (rebuild_) {
    rebuild_sorted();
    return;
  }
  for (const change& c : pending_) {
    if (c.evicts) {
      replace_sorted(c.removed, c.added);
    } else {
      insert_sorted(c.added);
    }
  }
  pending_.clear();
}

void latency_tracker::rebuild_sorted() {
  sorted_.assign(ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(size_));
  std::sort(sorted_.begin(), sorted_.end());
  pending_.clear();
  rebuild_ = false;
}

void latency_tracker::insert_sorted(std::int64_t value) {
  // Within the reserved capacity (the window): never allocates.
  sorted_.insert(std::upper_bound(sorted_.begin(), sorted_.end(), value), value);
}

// Overwrites one copy of `removed` with `added` and shifts the values in between by one place,
// so only the stretch between the two positions moves.
void latency_tracker::replace_sorted(std::int64_t removed, std::int64_t added) {
  const auto first = sorted_.begin();
  const auto last = sorted_.end();
  const auto hole = std::lower_bound(first, last, removed);  // present: it is in the window
  if (added > removed) {
    const auto to = std::upper_bound(hole + 1, last, added);
    std::move(hole + 1, to, hole);
    *(to - 1) = added;
  } else if (added < removed) {
    const auto to = std::upper_bound(first, hole, added);
    std::move_backward(to, hole, hole + 1);
    *to = added;
  }
}

}  // namespace conveyor
