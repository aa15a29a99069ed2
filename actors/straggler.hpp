#pragma once
/// The straggler actor: finishes, in the background, samples that a preprocessor handed off
/// because they ran over their latency budget. It runs only the steps still to do (the
/// sample's state says where the chain stopped) and sends the result to the batcher, which
/// lets it join a later batch of the same epoch. A pool of them runs on threads of their own.

#include <caf/actor_system.hpp>

#include <memory>

#include "actors/reporting.hpp"
#include "actors/worker_context.hpp"
#include "core/pipeline_status.hpp"
#include "core/transform_chain.hpp"
#include "messages/pipeline_actors.hpp"

namespace conveyor {

struct straggler_options {
  worker_context context;
  transform_chain chain;
  batcher_actor batcher;
  std::shared_ptr<pipeline_status> status;  ///< counts executed steps
  reporting report;
};

straggler_actor spawn_straggler(caf::actor_system& sys, straggler_options options);

}  // namespace conveyor
