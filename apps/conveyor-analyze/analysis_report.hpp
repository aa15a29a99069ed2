#pragma once
/// What conveyor-analyze measured, what DS-Analyzer's model makes of it (the verdict, the
/// what-ifs, a recommendation), and the two ways it is told: a table on stdout, verdict
/// first, and one JSON document.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apps/conveyor-analyze/measure_fetch.hpp"
#include "apps/conveyor-analyze/measure_prep.hpp"
#include "core/analysis/stall_model.hpp"

namespace conveyor {

/// The measurements and the settings they are judged against.
struct analysis_inputs {
  std::string topology;
  std::string dataset_path;
  std::uint64_t dataset_size = 0;
  std::uint64_t epoch_samples = 0;  ///< this node's share of an epoch
  /// Samples per second the trainer consumes; infinite when it takes no time per batch.
  double ingestion = 0;
  std::string ingestion_source;  ///< where `ingestion` came from, for the report
  int gpus = 1;
  std::uint64_t batch_size = 1;
  double step_ms = 0;
  int preprocessors = 1;  ///< what the topology runs ("auto": one per core)
  int cores = 1;
  analysis::prep_scaling scaling{{1.0}};
  std::uint64_t prep_samples = 0;  ///< samples the prep measure ran on
  sample_costs costs;
  /// The prep rate on `cores` workers with scaled decode on and off (both measured); nullopt
  /// without a decode step that can scale.
  std::optional<double> scaled_on_rate;
  std::optional<double> scaled_off_rate;
  bool scaled_configured = true;
  fetch_measurement fetch;
  int readers = 1;
  /// The share of samples that later epochs find in memory: [cache] over the dataset's bytes,
  /// else 1 when the dataset fits in the memory available (the page cache keeps it), else 0
  /// (under a new random order each epoch the page cache evicts before samples come around).
  double cached_fraction = 0;
  std::string cache_note;  ///< why cached_fraction is what it is
};

struct what_if_row {
  std::string setting;  ///< e.g. "4", "0.3", "true"
  bool extrapolated = false;
  analysis::prediction outcome;
};

struct analysis_result {
  analysis::rates steady_rates;  ///< later epochs: cached_fraction from memory
  analysis::prediction first_epoch;
  analysis::prediction steady;
  std::vector<what_if_row> by_preprocessors;
  std::vector<what_if_row> by_cache_fraction;
  std::vector<what_if_row> by_batch_size;  ///< empty for a trainer that takes no time
  std::vector<what_if_row> by_scaled_decode;
  std::string recommendation;
};

/// The verdict and the what-ifs. Pure.
analysis_result analyse(const analysis_inputs& in);

/// The report for a terminal: the verdict first, then the measured rates and the what-ifs.
std::string render_text(const analysis_inputs& in, const analysis_result& out);
/// The same as one JSON document.
std::string render_json(const analysis_inputs& in, const analysis_result& out);

}  // namespace conveyor
