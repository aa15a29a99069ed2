#include "core/batching/bucket_queue.hpp"

#include <algorithm>
#include <limits>

namespace conveyor {

bucket_queue::bucket_queue(bucketing buckets)
    : buckets_(std::move(buckets)), queues_(buckets_.buckets()) {}

void bucket_queue::push(prepared_ptr sample) {
  auto& q = queues_[buckets_.bucket_of(*sample)];
  q.emplace_back(arrivals_++, std::move(sample));
  ++size_;
}

bool bucket_queue::has_full(std::uint64_t n) const noexcept {
  return std::any_of(queues_.begin(), queues_.end(),
                     [n](const std::deque<entry>& q) { return q.size() >= n && !q.empty(); });
}

std::size_t bucket_queue::oldest_holding(std::uint64_t n) const noexcept {
  std::size_t best = queues_.size();
  auto oldest = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t b = 0; b < queues_.size(); ++b) {
    const auto& q = queues_[b];
    if (!q.empty() && q.size() >= n && q.front().first < oldest) {
      oldest = q.front().first;
      best = b;
    }
  }
  return best;
}

// Moves up to `n` samples from the front of `bucket` to `out`. One at a time: vector::assign
// from deque move iterators trips a false -Wnull-dereference in g++ 12 at -O3.
void bucket_queue::move_from(std::size_t bucket, std::uint64_t n, std::vector<prepared_ptr>& out) {
  auto& q = queues_[bucket];
  for (; n > 0 && !q.empty(); --n) {
    out.push_back(std::move(q.front().second));
    q.pop_front();
    --size_;
  }
}

std::vector<prepared_ptr> bucket_queue::take(std::uint64_t n) {
  n = std::min(n, size_);
  std::vector<prepared_ptr> out;
  out.reserve(n);
  if (n == 0) {
    return out;
  }
  if (auto full = oldest_holding(n); full < queues_.size()) {
    move_from(full, n, out);
    return out;
  }
  const auto start = static_cast<std::ptrdiff_t>(oldest_holding(1));
  const auto count = static_cast<std::ptrdiff_t>(queues_.size());
  move_from(static_cast<std::size_t>(start), n, out);
  for (std::ptrdiff_t d = 1; out.size() < n && d < count; ++d) {
    for (auto b : {start - d, start + d}) {
      if (b >= 0 && b < count) {
        move_from(static_cast<std::size_t>(b), n - out.size(), out);
      }
    }
  }
  return out;
}

}  // namespace conveyor
