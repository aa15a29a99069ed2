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
};

/// Peak resident memory of this process, in MiB.
double peak_rss_mb();

/// The JSON line: samples, epochs, epoch_s (mean), samples_per_s, stall_s, stall_fraction,
/// lost, duplicates, quarantined, peak_rss_mb, and the run's settings.
std::string summary_json(const run_facts& facts, const training_record::totals& seen,
                         const pipeline_report& report);

/// True when the run delivered every sample exactly once (or quarantined it).
bool run_is_clean(const run_facts& facts, const training_record::totals& seen,
                  const pipeline_report& report);

}  // namespace conveyor
