#pragma once
/// The typed interfaces of the pipeline's roles (CAF 0.17 syntax), declared in the order
/// their handles are needed: feeder, straggler, preprocessor, reader, batcher.
///
///   batcher --read(ticket, worker, preprocessor)--> reader --prepare(raw)--> preprocessor
///   preprocessor --prepared / failed--> batcher --batch(plan)--> feeder[gpu]
///   preprocessor --handed_off(handoff)--> batcher --finish(handoff)--> straggler
///   straggler --prepared / failed--> batcher --budget, permit--> preprocessors
///   feeder --credit(gpu, batches, released samples)--> batcher
///   supervisor --worker_up / worker_down--> batcher
///   autotuner --tune(counts)--> batcher

#include <caf/actor.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/analysis/autotune.hpp"
#include "messages/atoms.hpp"
#include "messages/sample_messages.hpp"

namespace conveyor {
namespace analysis {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tuning& x) {
  return f(caf::meta::type_name("tuning"), x.preprocessors, x.stragglers, x.readers, x.window);
}

}  // namespace analysis

/// Owns a GPU's batch buffers: collates each plan into a buffer and hands it to the trainer;
/// `release(seq)` returns buffer `seq` and a credit upstream.
using feeder_actor =
    caf::typed_actor<caf::reacts_to<atoms::batch, batch_plan>,
                     caf::reacts_to<atoms::release, std::uint64_t>, caf::reacts_to<atoms::tick>>;

/// Finishes samples that preprocessors handed off (the steps still to do).
using straggler_actor =
    caf::typed_actor<caf::reacts_to<atoms::finish, handoff>, caf::reacts_to<atoms::tick>>;

/// Runs the transform chain on raw samples, one at a time; hands a sample over budget back to
/// the batcher, which passes it to a straggler actor, when it holds a hand-off permit (the
/// batcher grants one at a time; the hand-off uses it up).
using preprocessor_actor =
    caf::typed_actor<caf::reacts_to<atoms::prepare, raw_sample>,
                     caf::reacts_to<atoms::budget, budget_figures>, caf::reacts_to<atoms::permit>,
                     caf::reacts_to<atoms::tick>>;

/// Reads sample `ticket` and passes it to the preprocessor named in the request.
using reader_actor =
    caf::typed_actor<caf::reacts_to<atoms::read, sample_ticket, preprocessor_actor>,
                     caf::reacts_to<atoms::tick>>;

/// The pipeline's coordinator; see core/batching/batcher_core.hpp for what it promises. Supervisors
/// tell it when a worker (role, index) comes up with its handle, and when one goes down: then
/// the samples it held are issued again, and `culprit` (the attempt it was working on, 0 if
/// none) is charged a failure with `reason`; `done_through` is the last attempt it completed
/// (a reader passed every attempt up to it on to a preprocessor: those are not lost).
/// `tune` sets the active workers of each pool and the window (batcher_core::set_active,
/// set_window).
using batcher_actor =
    caf::typed_actor<caf::reacts_to<atoms::connect, std::vector<feeder_actor>>,
                     caf::reacts_to<atoms::prepared, prepared_ptr>,
                     caf::reacts_to<atoms::handed_off, handoff>,
                     caf::reacts_to<atoms::failed, sample_failure>,
                     caf::reacts_to<atoms::credit, std::int32_t, std::uint64_t, std::uint64_t>,
                     caf::reacts_to<atoms::worker_up, std::int32_t, std::int32_t, caf::actor>,
                     caf::reacts_to<atoms::worker_down, std::int32_t, std::int32_t, std::uint64_t,
                                    std::uint64_t, std::string>,
                     caf::reacts_to<atoms::tune, analysis::tuning>, caf::reacts_to<atoms::tick>>;

}  // namespace conveyor
