#pragma once
/// The node's self-sizing (`pipeline.autotune`): every interval it reads what the pipeline
/// measured (core/delivery/status_totals.hpp), the CPU the rest of the machine used
/// (core/metrics/cpu_usage.hpp) and whether it is short of memory (under a tenth available,
/// core/base/memory_bound.hpp), asks the plain autotuner (core/analysis/autotune.hpp) and,
/// when the counts change, tells the batcher (`tune`): it gives work only to that many
/// preprocessors, straggler actors and readers of those spawned, within that window. Every
/// decision is logged with its reason by the logger "autotune"; the counts and the number of
/// changes are kept in the status (the run's report and the node's JSON line).

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <memory>

#include "core/analysis/autotune.hpp"
#include "core/delivery/pipeline_status.hpp"
#include "messages/pipeline_actors.hpp"

namespace conveyor {

using autotuner_actor = caf::typed_actor<caf::reacts_to<atoms::tick>>;

struct autotuner_options {
  std::shared_ptr<pipeline_status> status;
  batcher_actor batcher;
  int gpus = 1;  ///< trainers (one per channel)
  /// Where it starts and its bounds: `most` holds the spawned workers and the largest window
  /// (pipeline.max_window_samples).
  analysis::tuning start;
  analysis::tuning least;
  analysis::tuning most;
  analysis::autotune_settings settings{};
  std::chrono::milliseconds every{1000};
};

autotuner_actor spawn_autotuner(caf::actor_system& sys, autotuner_options options);

}  // namespace conveyor
