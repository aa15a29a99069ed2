#pragma once
/// The preprocessor: runs the transform chain on one raw sample at a time and sends the
/// prepared sample (or the reason it failed) to the batcher. A pool of them runs, each on its
/// own thread (detached), one per core by default.
///
/// With hand-offs on, a sample that runs over the latency budget the batcher broadcasts is
/// handed, between two steps and with its intermediate state, back to the batcher (which gives
/// it to a straggler actor), and the preprocessor takes the next sample; an image whose header
/// already says it is too large to make the budget is handed off before its decode. A hand-off
/// needs the batcher's permit, which says a straggler actor can start the sample soon; without
/// one the preprocessor finishes the sample itself. No step is ever run twice.

#include <caf/actor_system.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "actors/reporting.hpp"
#include "actors/worker_context.hpp"
#include "core/delivery/pipeline_status.hpp"
#include "core/transforms/transform_chain.hpp"
#include "messages/pipeline_actors.hpp"

namespace conveyor {

struct preprocessor_options {
  worker_context context;
  transform_chain chain;
  /// The pipeline's fields with their collates: each prepared sample must fit it.
  std::shared_ptr<const sample_schema> schema;
  batcher_actor batcher;
  bool hand_off = false;                    ///< false: never hand off
  std::shared_ptr<pipeline_status> status;  ///< counts executed steps
  reporting report;
};

preprocessor_actor spawn_preprocessor(caf::actor_system& sys, preprocessor_options options);

}  // namespace conveyor
