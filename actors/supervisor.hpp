#pragma once
/// A supervisor: starts the workers of one role (readers, preprocessors or straggler actors),
/// monitors them, and restarts one that fails (crashes, or hangs: busy with one sample past
/// the hang deadline) after an exponential backoff with jitter, by its strategy (one_for_one,
/// one_for_all, rest_for_one). It tells the batcher when a worker goes down (its samples are
/// issued again) and when its replacement is up. Past its restart intensity (more than
/// max_restarts within the period) it escalates: the pipeline fails with an error naming the
/// role and the last failure, and every trainer is woken; never a hang.

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <chrono>
#include <functional>
#include <memory>

#include "actors/worker_context.hpp"
#include "core/delivery/pipeline_status.hpp"
#include "core/supervision/restart_budget.hpp"
#include "messages/pipeline_actors.hpp"

namespace conveyor {

struct supervision_settings {
  restart_strategy strategy = restart_strategy::one_for_one;
  restart_settings restart;
  std::chrono::milliseconds hang_timeout{30000};  ///< 0: no hang detection
};

struct supervisor_options {
  worker_role role = worker_role::preprocessor;
  int children = 1;
  /// Spawns the worker of place `context.index` (generation `context.generation`). Called on
  /// the supervisor's CAF thread, at its start and on every restart, possibly after its
  /// spawner has let go of the supervisor (a shutdown right after the start): it must own
  /// what it uses, never point into its spawner.
  std::function<caf::actor(const worker_context& context)> spawn;
  std::shared_ptr<const fault_injector> faults;  ///< passed to every worker; may be null
  supervision_settings settings;
  batcher_actor batcher;
  std::shared_ptr<pipeline_status> status;
};

/// Starts the children at once. Keep the handle: an unreachable supervisor dies. An exit
/// message (the pipeline's shutdown) stops its children with it.
caf::actor spawn_supervisor(caf::actor_system& sys, supervisor_options options);

}  // namespace conveyor
