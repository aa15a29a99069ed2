#pragma once
/// The prepared samples of one epoch that wait for a batch, by bucket (bucketing.hpp), each
/// bucket in completion order. Without bucketing it is one queue: batches take the oldest
/// samples first. Single-threaded (owned by the batching policy).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "core/batching/bucketing.hpp"

namespace conveyor {

class bucket_queue {
 public:
  explicit bucket_queue(bucketing buckets = {});

  void push(prepared_ptr sample);
  /// Samples waiting, over every bucket.
  std::uint64_t size() const noexcept { return size_; }
  /// Some bucket holds at least `n` samples.
  bool has_full(std::uint64_t n) const noexcept;
  /// Takes min(n, size()) samples. A bucket that holds n gives them, oldest first (of such
  /// buckets, the one whose oldest sample waited longest). Otherwise the bucket whose oldest
  /// sample waited longest gives all it has and its neighbours fill the rest, nearest bucket
  /// first (lengths as close as there are), oldest first within each.
  std::vector<prepared_ptr> take(std::uint64_t n);

 private:
  using entry = std::pair<std::uint64_t, prepared_ptr>;  ///< (arrival number, sample)

  /// The non-empty bucket with the oldest front sample among those holding at least `n`.
  std::size_t oldest_holding(std::uint64_t n) const noexcept;
  void move_from(std::size_t bucket, std::uint64_t n, std::vector<prepared_ptr>& out);

  bucketing buckets_;
  std::vector<std::deque<entry>> queues_;
  std::uint64_t size_ = 0;
  std::uint64_t arrivals_ = 0;
};

}  // namespace conveyor
