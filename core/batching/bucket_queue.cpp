#include "core/batching/bucket_queue.hpp"

#include <algorithm>

namespace conveyor {

bucket_queue::bucket_queue(bucketing buckets, std::shared_ptr<bucket_learner> learner)
    : buckets_(std::move(buckets)), learner_(std::move(learner)) {}

void bucket_queue::push(prepared_ptr sample) {
  const auto length = buckets_.length_of(*sample);
  if (learner_) {
    learner_->observe(length);
  }
  waiting_.push_back({length, std::move(sample)});
}

std::vector<std::vector<std::size_t>> bucket_queue::by_bucket() const {
  const auto& boundaries =
      learner_ && buckets_.boundaries.empty() ? learner_->boundaries() : buckets_.boundaries;
  std::vector<std::vector<std::size_t>> out(boundaries.size() + 1);
  for (std::size_t i = 0; i < waiting_.size(); ++i) {
    out[bucket_of_length(waiting_[i].length, boundaries)].push_back(i);
  }
  return out;
}

bool bucket_queue::has_full(std::uint64_t n) const {
  if (!buckets_.enabled()) {
    return !waiting_.empty() && waiting_.size() >= n;
  }
  const auto buckets = by_bucket();
  return std::any_of(buckets.begin(), buckets.end(), [n](const std::vector<std::size_t>& b) {
    return !b.empty() && b.size() >= n;
  });
}

void bucket_queue::move_out(std::vector<std::size_t> positions, std::vector<prepared_ptr>& out) {
  for (auto p : positions) {
    out.push_back(std::move(waiting_[p].sample));
  }
  std::sort(positions.begin(), positions.end());
  // Keep the rest in completion order.
  std::size_t kept = 0;
  for (std::size_t i = 0, next = 0; i < waiting_.size(); ++i) {
    if (next < positions.size() && positions[next] == i) {
      ++next;
      continue;
    }
    waiting_[kept++] = std::move(waiting_[i]);
  }
  waiting_.resize(kept);
}

std::vector<prepared_ptr> bucket_queue::take(std::uint64_t n) {
  n = std::min<std::uint64_t>(n, waiting_.size());
  std::vector<prepared_ptr> out;
  out.reserve(n);
  if (n == 0) {
    return out;
  }
  const auto buckets = by_bucket();
  // The bucket holding n whose oldest sample waited longest; else the oldest sample's bucket.
  std::size_t start = buckets.size();
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    if (buckets[b].size() >= n &&
        (start == buckets.size() || buckets[b].front() < buckets[start].front())) {
      start = b;
    }
  }
  std::vector<std::size_t> chosen;
  if (start < buckets.size()) {
    chosen.assign(buckets[start].begin(), buckets[start].begin() + static_cast<std::ptrdiff_t>(n));
    move_out(std::move(chosen), out);
    return out;
  }
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    if (!buckets[b].empty() && buckets[b].front() == 0) {
      start = b;  // position 0 is the oldest sample
    }
  }
  const auto count = static_cast<std::ptrdiff_t>(buckets.size());
  auto add = [&](std::ptrdiff_t b) {
    if (b < 0 || b >= count) {
      return;
    }
    for (auto p : buckets[static_cast<std::size_t>(b)]) {
      if (chosen.size() == n) {
        return;
      }
      chosen.push_back(p);
    }
  };
  add(static_cast<std::ptrdiff_t>(start));
  for (std::ptrdiff_t d = 1; chosen.size() < n && d < count; ++d) {
    add(static_cast<std::ptrdiff_t>(start) - d);
    add(static_cast<std::ptrdiff_t>(start) + d);
  }
  move_out(std::move(chosen), out);
  return out;
}

}  // namespace conveyor
