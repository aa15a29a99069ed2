#pragma once
/// The straggler actor: finishes, in the background, samples that a preprocessor handed off
/// because they ran over their latency budget. It runs only the steps still to do (the
/// sample's state says where the chain stopped) and sends the result to the batcher, which
/// lets it join a later batch of the same epoch. A pool of them runs on threads of their own.
///
/// Priority: straggler threads run at the preprocessors' own priority, on purpose. A lowered
/// nice value does not rank them below our preprocessors only: it ranks them below every
/// thread of every process on the machine (CFS weights: nice 10 gets ~1/10 of a nice-0
/// thread's share), so on a busy node (a trainer's Python, NCCL and logging threads) they
/// starved, the window filled with handed-off samples and the preprocessors idled. Their share
/// is bounded by count instead: the batcher's hand-off permits (batcher_core) let at most a
/// few samples per straggler actor wait, and at most batching.handoff_share of the window be
/// handed off; past that, preprocessors finish slow samples themselves.

#include <caf/actor_system.hpp>

#include <memory>

#include "actors/reporting.hpp"
#include "actors/worker_context.hpp"
#include "core/delivery/pipeline_status.hpp"
#include "core/transforms/transform_chain.hpp"
#include "messages/pipeline_actors.hpp"

namespace conveyor {

struct straggler_options {
  worker_context context;
  transform_chain chain;
  /// The pipeline's fields with their collates: each prepared sample must fit it.
  std::shared_ptr<const sample_schema> schema;
  batcher_actor batcher;
  std::shared_ptr<pipeline_status> status;  ///< counts executed steps
  reporting report;
};

straggler_actor spawn_straggler(caf::actor_system& sys, straggler_options options);

}  // namespace conveyor
