#pragma once
/// The one JSON line conveyor-node prints on stdout at the end of a run, for scripts and
/// benchmarks. Keys are stable.

#include <cstdint>
#include <string>

#include "apps/conveyor-node/simulated_trainer.hpp"
#include "conveyor/pipeline.hpp"

namespace conveyor {

struct run_facts {
  pipeline_info info;
  double step_ms = 0;
  double wall_s = 0;
  bool interrupted = false;  ///< stopped by SIGINT or SIGTERM before the last epoch ended
};

/// Peak resident memory of this process, in MiB.
double peak_rss_mb();

/// The JSON line: samples, epochs, epoch_s (mean), samples_per_s, stall_s, stall_fraction,
/// lost, duplicates, quarantined, peak_rss_mb, interrupted, and the run's settings.
/// stall_fraction (the trainers' wait / (wait + step)) is null at step_ms 0: a trainer that
/// does no work only waits, so the fraction would be 1 whatever the pipeline does; read
/// samples_per_s there. After an interrupted run, lost counts the samples the run never reached.
/// A resumed run (--resume) counts the samples delivered before it (delivered_before) as
/// accounted for, and says which epoch it started in (start_epoch).
std::string summary_json(const run_facts& facts, const training_record::totals& seen,
                         const pipeline_report& report);

/// True when the run delivered every sample exactly once (or quarantined it).
bool run_is_clean(const run_facts& facts, const training_record::totals& seen,
                  const pipeline_report& report);

}  // namespace conveyor
