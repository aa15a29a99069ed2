#pragma once
/// conveyor-analyze's preparation measures, on samples held in memory (no storage in the way):
/// the node's own pipeline (its readers, preprocessors, straggler actors, batcher, feeders) on
/// them with a trainer that takes no time, for a given number of preprocessors: what the node
/// prepares when nothing else holds it back; and the bare transform chain on one thread, for
/// the per-sample cost distribution (the straggler tail) and each step's mean.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "actors/pipeline_runtime.hpp"
#include "core/storage/record.hpp"
#include "core/storage/sample_source.hpp"
#include "core/transforms/transform_chain.hpp"

namespace conveyor {

/// One worker's cost per sample, in milliseconds.
struct sample_costs {
  double mean_ms = 0;
  double p50_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
  std::vector<std::pair<std::string, double>> step_mean_ms;  ///< in chain order
};

/// Called after each sample prepared, with how many so far: for a progress bar.
using progress_fn = std::function<void(std::uint64_t)>;

/// `progress` made safe to call from several threads (one call at a time); empty stays empty.
progress_fn serialized(progress_fn progress);

/// `count` samples of `source` read into memory, chosen evenly over its ids. Errors of the
/// reads are left out (the fetch measure meets them).
std::vector<record> load_samples(const sample_source& source, std::uint64_t count);

/// The per-sample costs of `chain` over every one of `samples`, on one thread. Samples the
/// chain refuses (corrupt) count at what they cost until refused.
sample_costs chain_costs(const transform_chain& chain, const std::vector<record>& samples,
                         const progress_fn& progress = {});

/// Samples per second of the node's pipeline of `spec` (from resolve_topology) over `source`
/// (held in memory) for `epochs` epochs, with `workers` preprocessors and `chain` in place of
/// the spec's, a trainer on each GPU taking every batch at once. Nothing else of the spec's
/// run: no cache, no peers, no monitor, no CUDA (the CPU's part is what is measured).
double pipeline_rate(pipeline_spec spec, std::shared_ptr<const sample_source> source,
                     const transform_chain& chain, int workers, std::uint64_t epochs,
                     const progress_fn& progress = {});

}  // namespace conveyor
