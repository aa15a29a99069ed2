#include "api/resolve_autotune.hpp"

#include <algorithm>

#include "api/resolve_topology.hpp"

namespace conveyor {

expected<void> plan_autotune(const topology& t, pipeline_spec& spec) {
  if (!t.pipeline.autotune) {
    return {};
  }
  auto& s = spec.settings;
  const bool hand_off = s.hand_off && spec.stragglers > 0;
  if (s.window_samples == 0) {
    s.window_samples = default_window(spec.prefetch_batches, spec.policy, s);
  }
  const auto most = spawned_counts(t.pipeline);
  autotune_plan plan;
  plan.start = {s.workers, hand_off ? spec.stragglers : 0, spec.readers, s.window_samples};
  plan.most = {most.preprocessors, hand_off ? most.stragglers : 0, most.readers,
               t.pipeline.max_window_samples == auto_count
                   ? 4 * s.window_samples
                   : static_cast<std::uint64_t>(t.pipeline.max_window_samples)};
  if (plan.most.window < s.window_samples) {
    return error{errc::invalid_config, t.source + ": pipeline.max_window_samples = " +
                                           std::to_string(t.pipeline.max_window_samples) +
                                           " is below the starting window of " +
                                           std::to_string(s.window_samples) +
                                           " samples (pipeline.window_samples, or its \"auto\")"};
  }
  plan.least = {1, std::min(1, plan.most.stragglers), 1,
                s.batch_size * static_cast<std::uint64_t>(s.gpus)};
  // Each preprocessor's lookahead follows it (default_window).
  const std::uint64_t lookahead = spec.policy == batching_policy::in_order ? 6 : 2;
  plan.settings.window_per_worker = lookahead * s.per_worker_limit;
  s.workers = plan.most.preprocessors;
  spec.stragglers = plan.most.stragglers;
  spec.readers = plan.most.readers;
  spec.autotune = plan;
  return {};
}

}  // namespace conveyor
