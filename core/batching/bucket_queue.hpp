#pragma once
/// The prepared samples of one epoch that wait for a batch, by bucket (bucketing.hpp), each
/// bucket in completion order. Without bucketing it is one queue: batches take the oldest
/// samples first. A sample's bucket is decided when batches are formed, from the boundaries
/// then (given, or learned so far by the learner the policy shares between its epochs'
/// queues), so that learned boundaries apply to every waiting sample. Single-threaded (owned
/// by the batching policy).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "core/batching/bucket_learner.hpp"
#include "core/batching/bucketing.hpp"

namespace conveyor {

class bucket_queue {
 public:
  /// `learner`: where learned boundaries come from (buckets.learned > 1 and no boundaries
  /// given); it observes every sample pushed here.
  explicit bucket_queue(bucketing buckets = {}, std::shared_ptr<bucket_learner> learner = {});

  void push(prepared_ptr sample);
  /// Samples waiting, over every bucket.
  std::uint64_t size() const noexcept { return waiting_.size(); }
  /// Some bucket holds at least `n` samples.
  bool has_full(std::uint64_t n) const;
  /// Takes min(n, size()) samples. A bucket that holds n gives them, oldest first (of such
  /// buckets, the one whose oldest sample waited longest). Otherwise the bucket whose oldest
  /// sample waited longest gives all it has and its neighbours fill the rest, nearest bucket
  /// first (lengths as close as there are), oldest first within each.
  std::vector<prepared_ptr> take(std::uint64_t n);

 private:
  struct entry {
    std::int64_t length = 0;
    prepared_ptr sample;
  };

  /// The positions in waiting_ (oldest first) of each bucket's samples, by the boundaries now.
  std::vector<std::vector<std::size_t>> by_bucket() const;
  /// Moves the samples at `positions` out of waiting_, into `out` in that order.
  void move_out(std::vector<std::size_t> positions, std::vector<prepared_ptr>& out);

  bucketing buckets_;
  std::shared_ptr<bucket_learner> learner_;
  std::deque<entry> waiting_;  ///< in completion order
};

}  // namespace conveyor
