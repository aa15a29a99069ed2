#pragma once
/// What travels through the pipeline for one sample: its ticket (which epoch, which place in
/// the epoch, which dataset index), and once prepared, its fields.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/host_array.hpp"

namespace conveyor {

/// Names one sample of one epoch. Plain value.
struct sample_ticket {
  std::uint64_t epoch = 0;
  std::uint64_t seq = 0;         ///< position in the epoch's sampler order
  std::uint64_t sample_id = 0;   ///< index in the dataset
  std::uint64_t epoch_seed = 0;  ///< seeds the sample's transforms
  /// Names this attempt at the sample, unique in the run: a result whose attempt is no longer
  /// the sample's current one (its worker was declared dead, or the sample was re-issued) is
  /// ignored, so nothing is delivered twice.
  std::uint64_t attempt = 0;
  std::uint32_t retry = 0;  ///< how many times the sample was issued before this attempt
};

/// A sample whose transform chain has run to the end. Shared immutably once made.
struct prepared_sample {
  sample_ticket ticket;
  std::string key;
  /// Its fields, in the order of the pipeline's sample_schema (core/base/field_schema.hpp),
  /// each checked to fit the batch (unfit_for_batch) before the sample was sent on.
  std::vector<host_array> fields;
  std::vector<std::int64_t> step_ns;  ///< wall time of each step
  std::int64_t source_pixels = 0;     ///< of the encoded image, from its header (0: unknown)
  bool handed_off = false;            ///< a straggler actor finished it
  /// When its last step ended; the batcher measures batch assembly latency from it.
  std::chrono::steady_clock::time_point prepared_at{};
};

using prepared_ptr = std::shared_ptr<const prepared_sample>;

/// The samples that make one batch for one GPU. The feeder writes their fields, in this
/// order, into one batch buffer.
struct batch_plan {
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;  ///< batch number within the epoch (policy-defined)
  int gpu = 0;
  std::vector<prepared_ptr> samples;
  /// This is the last batch of `epoch` for `gpu`. An empty plan with this flag set only says
  /// that the epoch is over for that GPU.
  bool last_in_epoch = false;
};

}  // namespace conveyor
