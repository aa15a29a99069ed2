#pragma once
/// Bucketing by length (`batching.bucket_by`): samples whose length (the extent of one axis of
/// one field, e.g. an utterance's frames) falls between the same two boundaries share a
/// batch, so that a padded batch pads little. The boundaries are given, or learned: `learned`
/// buckets of equal population (MLPerf's BucketingSampler splits its utterances sorted by
/// duration into equal parts), at the quantiles of the lengths seen so far
/// (bucket_learner.hpp). Plain value; pure functions.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/batching/prepared_sample.hpp"

namespace conveyor {

struct bucketing {
  std::size_t field = 0;  ///< the field's index in the pipeline's sample_schema
  int axis = 0;           ///< whose extent is the sample's length
  /// Given boundaries, strictly increasing, each >= 1: bucket 0 holds lengths below
  /// boundaries[0], bucket i those in [boundaries[i - 1], boundaries[i]), the last bucket the
  /// rest. Empty with learned 0: one bucket (no bucketing).
  std::vector<std::int64_t> boundaries;
  /// With no boundaries given: this many buckets (>= 2), their boundaries learned.
  std::size_t learned = 0;

  bool enabled() const noexcept { return !boundaries.empty() || learned > 1; }
  std::size_t buckets() const noexcept {
    return learned > 1 && boundaries.empty() ? learned : boundaries.size() + 1;
  }
  /// The length of `sample` (0 without bucketing). The sample has the field (the batcher's
  /// samples are checked against the schema before they are sent on).
  std::int64_t length_of(const prepared_sample& sample) const noexcept;
};

/// The bucket of `length` between `boundaries` (strictly increasing): how many are <= it.
std::size_t bucket_of_length(std::int64_t length,
                             const std::vector<std::int64_t>& boundaries) noexcept;

}  // namespace conveyor
