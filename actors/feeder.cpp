#include "actors/feeder.hpp"

#include <caf/all.hpp>

#include "core/base/log.hpp"
#include "core/base/monotonic_clock.hpp"

namespace conveyor {
namespace {

struct feeder_state {
  static inline const char* name = "feeder";
  std::vector<std::shared_ptr<host_batch>> ring;
  std::vector<std::uint64_t> free_slots;
  std::vector<bool> lent;                  ///< per slot: handed to the trainer, not yet released
  std::unique_ptr<actor_metrics> metrics;  ///< collate time per batch
};

using feeder_pointer = feeder_actor::stateful_pointer<feeder_state>;

void on_plan(feeder_pointer self, const feeder_options& opts, const batch_plan& plan) {
  auto& st = self->state;
  if (st.free_slots.empty()) {
    opts.status->fail(error{errc::invalid_argument,
                            "feeder " + std::to_string(opts.gpu) + ": batch without credit (bug)"});
    return;
  }
  auto start = std::chrono::steady_clock::now();
  auto slot = st.free_slots.back();
  st.free_slots.pop_back();
  auto& batch = *st.ring[slot];
  auto ok = opts.memory.tensors.empty()
                ? collate(plan, batch)
                : collate_into(plan, batch, opts.memory.tensors[slot], opts.memory.capacity);
  if (!ok) {
    log("feeder")->error("{}", ok.error().what());
    opts.status->fail(ok.error());
    return;
  }
  batch.slot = slot;
  batch.ready_ns = monotonic_ns();
  st.lent[slot] = true;
  opts.status->add_collate(elapsed_ns(start), plan.samples.size());
  opts.channel->push(st.ring[slot]);
  st.metrics->record(elapsed_ns(start));
}

void on_release(feeder_pointer self, const feeder_options& opts, std::uint64_t slot) {
  auto& st = self->state;
  if (slot >= st.ring.size() || !st.lent[slot]) {
    // Ignored, so that a buffer never enters the ring twice (two batches in one buffer).
    log("feeder")->error("feeder {}: release of buffer {}, which is not lent out: ignored",
                         opts.gpu, slot);
    return;
  }
  st.lent[slot] = false;
  auto samples = static_cast<std::uint64_t>(st.ring[slot]->size());
  st.free_slots.push_back(slot);
  self->send(opts.batcher, atoms::credit::value, opts.gpu, std::uint64_t{1}, samples);
}

feeder_actor::behavior_type host_feeder(feeder_pointer self, feeder_options opts) {
  auto& st = self->state;
  st.lent.assign(opts.slots, false);
  for (std::uint64_t i = 0; i < opts.slots; ++i) {
    st.ring.push_back(std::make_shared<host_batch>());
    st.free_slots.push_back(opts.slots - 1 - i);
  }
  st.metrics = std::make_unique<actor_metrics>("feeder-" + std::to_string(opts.gpu));
  self->send(opts.batcher, atoms::credit::value, opts.gpu, opts.slots, std::uint64_t{0});
  start_reporting(self, opts.report);
  return {
      [self, opts](atoms::batch, const batch_plan& plan) { on_plan(self, opts, plan); },
      [self, opts](atoms::release, std::uint64_t slot) { on_release(self, opts, slot); },
      [self, opts](atoms::tick) {
        auto extra = "ready=" + std::to_string(opts.channel->size()) +
                     " free_buffers=" + std::to_string(self->state.free_slots.size());
        report_and_rearm(self, opts.report, *self->state.metrics, std::move(extra));
      },
  };
}

}  // namespace

feeder_actor spawn_host_feeder(caf::actor_system& sys, feeder_options options) {
  return sys.spawn(host_feeder, std::move(options));
}

}  // namespace conveyor
