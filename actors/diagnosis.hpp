#pragma once
/// The node's live diagnosis: every interval it classifies what held the node back in the last
/// one (core/analysis/live_diagnosis.hpp: trainer-, prep-, fetch- or window-bound) from the
/// figures the pipeline keeps anyway (the trainers' wait in the channels, time in transform
/// steps and in reads, samples in flight), logs one line when the class changes, and adds the
/// interval to the status's time per class (the report and the node's JSON line).

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>

#include "core/delivery/pipeline_status.hpp"
#include "messages/atoms.hpp"

namespace conveyor {

using diagnosis_actor = caf::typed_actor<caf::reacts_to<atoms::tick>>;

struct diagnosis_options {
  std::shared_ptr<pipeline_status> status;
  int gpus = 1;           ///< trainers (one per channel)
  int preprocessors = 1;  ///< the capacity of the transform steps
  int readers = 1;
  std::chrono::milliseconds every{1000};
};

diagnosis_actor spawn_diagnosis(caf::actor_system& sys, diagnosis_options options);

}  // namespace conveyor
