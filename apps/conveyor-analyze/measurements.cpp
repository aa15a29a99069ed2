#include "apps/conveyor-analyze/measurements.hpp"

#include "core/transforms/normalize_placement.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "api/resolve_topology.hpp"
#include "apps/common/progress_bar.hpp"
#include "apps/conveyor-analyze/memory_source.hpp"
#include "core/base/log.hpp"
#include "core/batching/epoch_order.hpp"
#include "core/transforms/opencv_threads.hpp"

namespace conveyor {
namespace {

// Epochs of the in-memory samples that each pipeline measure runs: the first batches' start is
// then a small part of the time.
constexpr std::uint64_t measured_epochs = 2;

// `spec` with `workers` preprocessors and the readers and per_worker_limit a node of that many
// would have ("auto" resolved for them; numbers the topology gives kept).
pipeline_spec with_workers(pipeline_spec spec, const pipeline_config& p, int workers) {
  auto at = p;
  at.preprocessors = workers;
  const auto counts = resolve_counts(at);
  spec.readers = counts.readers;
  spec.settings.per_worker_limit = static_cast<std::uint64_t>(counts.per_worker_limit);
  return spec;
}

// The node's pipeline on the samples in memory, with 1 .. every core of preprocessors; and,
// on one thread, the bare chain's per-sample costs.
void measure_prep(const topology& t, const pipeline_spec& spec,
                  const std::shared_ptr<const memory_source>& memory, analysis_inputs& in) {
  const auto& samples = memory->records();
  {
    progress_bar bar("prep, per sample", samples.size());
    in.costs = chain_costs(spec.chain, samples, [&](std::uint64_t done) { bar.update(done); });
  }
  std::vector<double> rates;
  for (int w = 1; w <= in.cores; ++w) {
    progress_bar bar("prep, " + std::to_string(w) + " preprocessor" + (w > 1 ? "s" : ""),
                     memory->size() * measured_epochs);
    rates.push_back(pipeline_rate(with_workers(spec, t.pipeline, w), memory, spec.chain, w,
                                  measured_epochs, [&](std::uint64_t done) { bar.update(done); }));
  }
  in.scaling = analysis::prep_scaling(std::move(rates));
}

// The other setting of decode's scaled, through the pipeline at the configured preprocessors
// (at most every core); nothing without a decode step.
void measure_scaled_decode(const topology& t, const pipeline_spec& spec,
                           const std::shared_ptr<const memory_source>& memory,
                           analysis_inputs& in) {
  auto specs = t.transforms;
  auto* decode = specs.empty() ? nullptr : std::get_if<decode_spec>(&specs.front());
  if (decode == nullptr) {
    return;
  }
  in.scaled_configured = decode->scaled;
  decode->scaled = !decode->scaled;
  // As the pipeline runs it: its final normalize in the feeders.
  auto other = transform_chain::build(move_normalize_to_feeder(specs).cpu_chain);
  if (!other) {
    return;
  }
  const int workers = std::min(in.preprocessors, in.cores);
  progress_bar bar(std::string("prep, decode scaled = ") + (decode->scaled ? "true" : "false"),
                   memory->size() * measured_epochs);
  const double rate =
      pipeline_rate(with_workers(spec, t.pipeline, workers), memory, *other, workers,
                    measured_epochs, [&](std::uint64_t done) { bar.update(done); });
  const double configured = in.scaling.rate(workers);
  in.scaled_on_rate = decode->scaled ? rate : configured;
  in.scaled_off_rate = decode->scaled ? configured : rate;
}

// The first `count` samples of epoch 0 that are this node's.
std::vector<std::uint64_t> epoch_ids(const pipeline_spec& spec, std::uint64_t count) {
  const auto& s = spec.settings;
  const auto n = spec.source->size();
  auto order = epoch_order(n, s.seed, 0, s.order);
  std::vector<std::uint64_t> out;
  for (std::uint64_t p = 0; p < n && out.size() < count; ++p) {
    if (s.share.contains(p, order[p])) {
      out.push_back(order[p]);
    }
  }
  return out;
}

// MemAvailable of /proc/meminfo, in bytes (0 when unknown).
double memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") {
      return kb * 1024;
    }
  }
  return 0;
}

std::string megabytes(double bytes) {
  std::ostringstream o;
  o.precision(0);
  o << std::fixed << bytes / 1e6 << " MB";
  return o.str();
}

// What later epochs find in memory: the MinIO cache's share, or the page cache's.
void cached_share(const pipeline_spec& spec, analysis_inputs& in) {
  const double mean =
      in.fetch.samples ? static_cast<double>(in.fetch.bytes) / static_cast<double>(in.fetch.samples)
                       : 0;
  const double dataset = mean * static_cast<double>(in.dataset_size);
  if (spec.cache) {
    in.cached_fraction = std::min(1.0, static_cast<double>(spec.cache->planned_bytes()) / dataset);
    in.cache_note = "[cache] holds " + megabytes(static_cast<double>(spec.cache->planned_bytes())) +
                    " of the dataset's " + megabytes(dataset);
    return;
  }
  const double available = memory_available();
  if (dataset <= available) {
    in.cached_fraction = 1;
    in.cache_note = "the dataset (" + megabytes(dataset) + ") fits in the memory available (" +
                    megabytes(available) + "): the page cache keeps it after the first epoch";
  } else {
    in.cached_fraction = 0;
    in.cache_note = "the dataset (" + megabytes(dataset) + ") exceeds the memory available (" +
                    megabytes(available) +
                    "): under a new random order each epoch the page cache evicts samples "
                    "before they come around (a [cache] keeps a fixed share)";
  }
}

void set_ingestion(const topology& t, const pipeline_spec& spec, const measure_options& options,
                   analysis_inputs& in) {
  in.gpus = spec.settings.gpus;
  in.batch_size = spec.settings.batch_size;
  in.step_ms = t.trainer.step_ms;
  if (options.ingestion) {
    in.ingestion = *options.ingestion;
    in.ingestion_source = "given (--ingestion)";
  } else if (t.trainer.step_ms > 0) {
    in.ingestion = analysis::ingestion_rate(in.gpus, in.batch_size, t.trainer.step_ms);
    std::ostringstream source;
    source << "trainer.step_ms = " << t.trainer.step_ms << " ms a batch of " << in.batch_size
           << " on " << in.gpus << (in.gpus == 1 ? " GPU" : " GPUs");
    in.ingestion_source = source.str();
  } else {
    in.ingestion = std::numeric_limits<double>::infinity();
    in.ingestion_source =
        "none: trainer.step_ms = 0 (a trainer that takes no time: the job runs at the "
        "loader's rate); give --ingestion or trainer.step_ms";
  }
}

}  // namespace

analysis_inputs measure_all(const topology& t, const pipeline_spec& spec,
                            const measure_options& options) {
  opencv_threads_off single_threaded_opencv;  // as in the node: the workers are the parallelism
  analysis_inputs in;
  in.topology = t.source;
  in.dataset_path = t.dataset.path;
  in.dataset_size = spec.source->size();
  in.epoch_samples = spec.settings.share.size(in.dataset_size);
  in.cores = hardware_cores();
  in.preprocessors = spec.settings.workers;
  in.readers = spec.readers;
  set_ingestion(t, spec, options, in);
  auto samples = load_samples(*spec.source, options.prep_samples);
  in.prep_samples = samples.size();
  if (samples.empty()) {
    return in;  // nothing to measure: the caller says so
  }
  auto memory =
      std::make_shared<const memory_source>(std::move(samples), spec.source->class_names());
  measure_prep(t, spec, memory, in);
  measure_scaled_decode(t, spec, memory, in);
  auto ids = epoch_ids(spec, options.fetch_samples);
  progress_bar bar("fetch, cold then warm", 2 * ids.size());
  in.fetch =
      measure_fetch(*spec.source, ids, in.readers, [&](std::uint64_t done) { bar.update(done); });
  bar.finish();
  cached_share(spec, in);
  return in;
}

}  // namespace conveyor
