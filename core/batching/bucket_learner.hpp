#pragma once
/// The boundaries of `buckets` buckets of equal population, learned from the lengths of the
/// samples seen so far (bucketing.hpp `learned`): at the 1/buckets, 2/buckets, ... quantiles of
/// their lengths, as MLPerf's BucketingSampler splits a dataset sorted by duration into equal
/// parts, but without reading every sample first. They follow what arrives: recomputed after
/// 16 samples, each time the count doubles, and every 1024 samples after that; before any
/// sample, one bucket. Lengths that tie at a quantile merge buckets (the boundaries stay
/// strictly increasing). Single-threaded (owned by the batching policy, shared by its
/// epochs' queues).

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace conveyor {

class bucket_learner {
 public:
  explicit bucket_learner(std::size_t buckets) : buckets_(buckets) {}

  void observe(std::int64_t length);
  /// Strictly increasing, each >= 1, at most buckets - 1 of them.
  const std::vector<std::int64_t>& boundaries() const noexcept { return boundaries_; }
  std::uint64_t observed() const noexcept { return observed_; }

 private:
  void recompute();

  std::size_t buckets_;
  std::map<std::int64_t, std::uint64_t> counts_;  ///< length -> samples of that length
  std::uint64_t observed_ = 0;
  std::vector<std::int64_t> boundaries_;
};

}  // namespace conveyor
