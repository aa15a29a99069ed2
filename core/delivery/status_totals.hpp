#pragma once
/// The running totals a pipeline's status keeps (the trainers' wait, time in transform steps
/// and in reads, time the window was full, samples delivered) at one moment, and one interval
/// between two such moments: what the live diagnosis and the autotuner read each interval.

#include <chrono>
#include <cstdint>

#include "core/analysis/live_diagnosis.hpp"
#include "core/delivery/pipeline_status.hpp"

namespace conveyor {

struct status_totals {
  std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now();
  double trainer_wait_s = 0;  ///< over every trainer's channel
  double prep_busy_s = 0;     ///< in transform steps, wherever they ran
  double read_busy_s = 0;
  double window_full_s = 0;
  std::uint64_t delivered = 0;  ///< samples in batches handed to the feeders
  std::uint64_t prepared = 0;   ///< samples prepared, counted as they were (not per batch)
};

/// `status`'s totals now, over the channels of `gpus` trainers. Thread-safe.
status_totals take_totals(const pipeline_status& status, int gpus);

/// The interval from `a` to `b` (taken in that order), for `gpus` trainers and the
/// `preprocessors` and `readers` that were active in it. Pure.
analysis::interval_figures between(const status_totals& a, const status_totals& b, int gpus,
                                   int preprocessors, int readers);

}  // namespace conveyor
