#pragma once
/// conveyor-analyze's preparation measure: the topology's transform chain on samples held in
/// memory (no storage in the way), with 1, 2, ... N threads, one per preprocessor, each as the
/// node runs its preprocessors (OpenCV single-threaded inside). Also the per-sample cost
/// distribution with one thread (the straggler tail) and each step's mean.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

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

/// `count` samples of `source` read into memory, chosen evenly over its ids. Errors of the
/// reads are left out (the fetch measure meets them).
std::vector<record> load_samples(const sample_source& source, std::uint64_t count);

/// Samples per second of `chain` over every one of `samples`, on `workers` threads; `costs`,
/// when not null, gets the per-sample distribution (meant for one worker). Samples the chain
/// refuses (corrupt) count as done: the node quarantines them at that cost too.
double chain_rate(const transform_chain& chain, const std::vector<record>& samples, int workers,
                  sample_costs* costs = nullptr, const progress_fn& progress = {});

}  // namespace conveyor
