#pragma once
/// Bucketing by length (`batching.bucket_by`): samples whose length (the extent of one axis of
/// one field, e.g. an utterance's frames) falls between the same two boundaries share a
/// batch, so that a padded batch pads little. Plain value; pure functions.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/batching/prepared_sample.hpp"

namespace conveyor {

struct bucketing {
  std::size_t field = 0;  ///< the field's index in the pipeline's sample_schema
  int axis = 0;           ///< whose extent is the sample's length
  /// Strictly increasing, each >= 1: bucket 0 holds lengths below boundaries[0], bucket i
  /// those in [boundaries[i - 1], boundaries[i]), the last bucket the rest. Empty: one bucket
  /// (no bucketing).
  std::vector<std::int64_t> boundaries;

  bool enabled() const noexcept { return !boundaries.empty(); }
  std::size_t buckets() const noexcept { return boundaries.size() + 1; }
  /// The bucket of `sample` (0 without bucketing). The sample has the field (the batcher's
  /// samples are checked against the schema before they are sent on).
  std::size_t bucket_of(const prepared_sample& sample) const noexcept;
};

}  // namespace conveyor
