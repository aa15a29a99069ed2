#include "core/batching/bucket_learner.hpp"

#include <algorithm>

namespace conveyor {

void bucket_learner::observe(std::int64_t length) {
  ++counts_[length];
  ++observed_;
  const bool power_of_two = (observed_ & (observed_ - 1)) == 0;
  if ((observed_ >= 16 && power_of_two) || observed_ % 1024 == 0) {
    recompute();
  }
}

void bucket_learner::recompute() {
  boundaries_.clear();
  std::uint64_t below = 0;  // samples shorter than the length at `it`
  auto it = counts_.begin();
  for (std::size_t k = 1; k < buckets_; ++k) {
    // Bucket k begins at the first length with at least k / buckets of the samples below it.
    const auto wanted = (observed_ * k + buckets_ - 1) / buckets_;
    while (it != counts_.end() && below < wanted) {
      below += it->second;
      ++it;
    }
    if (it == counts_.end()) {
      break;
    }
    const auto boundary = std::max<std::int64_t>(it->first, 1);
    if (boundaries_.empty() || boundary > boundaries_.back()) {
      boundaries_.push_back(boundary);
    }
  }
}

}  // namespace conveyor
