#pragma once
/// pipeline.autotune, resolved: where the autotuner starts, its bounds, and the workers the
/// pipeline spawns for it (actors/autotuner.hpp).

#include "actors/pipeline_runtime.hpp"
#include "config/topology.hpp"
#include "conveyor/error.hpp"

namespace conveyor {

/// With pipeline.autotune, sets `spec.autotune` and makes `spec` spawn the most workers the
/// autotuner may use (spawned_counts(), api/resolve_topology.hpp; no straggler actors without
/// hand-offs): it starts at the counts `spec` holds (the topology's, "auto" resolved; the window
/// explicit or default_window's for them) and keeps the window within
/// pipeline.max_window_samples ("auto": 4 x the starting window) and at least a batch for each
/// of `spec`'s GPUs. invalid_config naming pipeline.max_window_samples when it is below the
/// starting window. Without autotune, `spec` is left as it is. Call it last (it needs the
/// buckets and the counts).
expected<void> plan_autotune(const topology& t, pipeline_spec& spec);

}  // namespace conveyor
