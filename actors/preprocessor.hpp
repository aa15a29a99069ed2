#pragma once
/// The preprocessor: runs the transform chain on one raw sample at a time and sends the
/// prepared sample (or the reason it failed) to the batcher. A pool of them runs, each on its
/// own thread (detached), one per core by default.
///
/// With straggler actors, a sample that runs over the latency budget the batcher broadcasts is
/// handed, between two steps and with its intermediate state, to a straggler actor, and the
/// preprocessor takes the next sample; an image whose header already says it is too large to
/// make the budget is handed off before its decode. No step is ever run twice.

#include <caf/actor_system.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "actors/reporting.hpp"
#include "core/pipeline_status.hpp"
#include "core/transform_chain.hpp"
#include "messages/pipeline_actors.hpp"

namespace conveyor {

struct preprocessor_options {
  std::int32_t index = 0;  ///< its place in the pool, sent back with every result
  transform_chain chain;
  batcher_actor batcher;
  std::vector<straggler_actor> stragglers;  ///< empty: never hand off
  std::shared_ptr<pipeline_status> status;  ///< counts executed steps
  reporting report;
};

preprocessor_actor spawn_preprocessor(caf::actor_system& sys, preprocessor_options options);

}  // namespace conveyor
