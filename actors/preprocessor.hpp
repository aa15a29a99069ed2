#pragma once
/// The preprocessor: runs the transform chain on one raw sample at a time and sends the
/// prepared sample (or the reason it failed) to the batcher. A pool of them runs, each on its
/// own thread (detached), one per core by default.

#include <caf/actor_system.hpp>

#include <cstdint>
#include <memory>

#include "actors/reporting.hpp"
#include "core/transform_chain.hpp"
#include "messages/pipeline_actors.hpp"

namespace conveyor {

struct preprocessor_options {
  std::int32_t index = 0;  ///< its place in the pool, sent back with every result
  transform_chain chain;
  batcher_actor batcher;
  reporting report;
};

preprocessor_actor spawn_preprocessor(caf::actor_system& sys, preprocessor_options options);

}  // namespace conveyor
