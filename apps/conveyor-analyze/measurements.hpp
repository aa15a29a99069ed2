#pragma once
/// conveyor-analyze's measures in order, from a resolved topology to analysis_inputs: prep
/// (the scaling curve, the per-sample costs, decode scaled on and off), fetch (cold and warm,
/// in epoch order), and the settings the model judges them by. Progress bars on stderr when
/// it is a terminal.

#include <cstdint>
#include <optional>
#include <string>

#include "actors/pipeline_runtime.hpp"
#include "apps/conveyor-analyze/analysis_report.hpp"
#include "config/topology.hpp"

namespace conveyor {

struct measure_options {
  std::uint64_t prep_samples = 300;    ///< samples held in memory for the prep measure
  std::uint64_t fetch_samples = 2000;  ///< samples read (twice) for the fetch measure
  std::optional<double> ingestion;     ///< samples/s given on the command line
};

/// Everything measured for topology `t` (resolved into `spec`). Precondition: spec came from
/// resolve_topology(t).
analysis_inputs measure_all(const topology& t, const pipeline_spec& spec,
                            const measure_options& options);

}  // namespace conveyor
