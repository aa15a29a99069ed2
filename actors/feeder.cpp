#include "actors/feeder.hpp"

#include <caf/all.hpp>

#include "core/base/log.hpp"
#include "core/base/monotonic_clock.hpp"
#include "core/feeding/host_copy_engine.hpp"
#include "core/feeding/slot_ring.hpp"

namespace conveyor {
namespace {

struct feeder_state {
  static inline const char* name = "feeder";
  std::shared_ptr<slot_ring> ring;                   ///< empty when the engine could not be set up
  std::vector<std::shared_ptr<host_batch>> batches;  ///< per slot: what the trainer reads
  std::unique_ptr<actor_metrics> metrics;  ///< per batch: writing the samples, queueing the copy
  blob_layout layout;                      ///< where each field lies in a slot's buffer
  std::optional<conveyor::collate_normalize>
      collate_normalize;  ///< feeder_options::collate_normalize

  feeder_state() = default;
  feeder_state(const feeder_state&) = delete;
  feeder_state& operator=(const feeder_state&) = delete;
  // CAF 0.17 destroys the state when the actor exits: batches the trainer holds keep the ring
  // (and their memory) alive, but nothing more is delivered.
  ~feeder_state() {
    if (ring) {
      ring->stop();
    }
  }
};

using feeder_pointer = feeder_actor::stateful_pointer<feeder_state>;

std::string feeder_name(const feeder_options& opts) {
  return "feeder " + std::to_string(opts.gpu);
}

void fail(const feeder_options& opts, const error& reason) {
  log("feeder")->error("{}", reason.what());
  opts.status->fail(reason);
}

expected<std::shared_ptr<slot_ring>> make_ring(const feeder_options& opts) {
  // The host feeder's own engine: inline and in place.
  auto engine = opts.engine ? opts.engine() : make_host_engine({false, true, {}});
  if (!engine) {
    return std::move(engine).error();
  }
  ring_options r;
  r.name = feeder_name(opts);
  r.slots = opts.slots;
  r.normalize = opts.normalize;
  r.normalized_type = opts.normalized_type;
  r.deadline = opts.device_timeout;
  r.host_memory = opts.memory;
  r.on_failure = [status = opts.status](const error& e) {
    log("feeder")->error("{}", e.what());
    status->fail(e);
  };
  return slot_ring::create(std::move(*engine), std::move(r));
}

/// What the ring copies of `plan`: the whole buffer, and the images it normalises on the
/// device (nothing for an empty plan).
batch_layout layout_of(const feeder_state& st, const feeder_options& opts, const batch_plan& plan) {
  batch_layout l;
  if (plan.samples.empty()) {
    return l;
  }
  l.bytes = st.layout.bytes;
  if (opts.normalize) {
    const auto& image = plan.samples.front()->fields[opts.normalize_field];
    l.images_offset = st.layout.fields[opts.normalize_field].values;
    l.images = {static_cast<int>(plan.samples.size()), static_cast<int>(image.extent(0)),
                static_cast<int>(image.extent(1)), static_cast<int>(image.extent(2)),
                pixel_layout::chw};
  }
  return l;
}

/// Where the trainer finds the slot's batch.
void point_at(host_batch& batch, ring_slot& slot, const feeder_options& opts) {
  const auto out = slot.output();
  batch.device = out.device;
  batch.bytes.clear();
  batch.external = slot.host();
  batch.device_data = out.device >= 0 ? out.data : nullptr;
  batch.normalized = out.normalized;
  batch.normalized_type = out.normalized_type;
  batch.normalized_field =
      out.normalized ? std::optional<std::size_t>(opts.normalize_field) : std::nullopt;
}

/// Writes the plan into a slot (counted as the samples' collate time from `start`) and submits
/// it; the ring hands the batch to the trainer once it is complete on the device.
expected<void> feed(feeder_state& st, const feeder_options& opts, const batch_plan& plan,
                    std::chrono::steady_clock::time_point start) {
  auto slot =
      st.ring->acquire(layout_of(st, opts, plan), "batch " + std::to_string(plan.index) +
                                                      " of epoch " + std::to_string(plan.epoch));
  if (!slot) {
    return std::move(slot).error();
  }
  const auto index = (*slot)->index();
  auto batch = st.batches[index];
  batch->fields = collate_batch(plan, *opts.schema, st.layout, (*slot)->host(),
                                st.collate_normalize ? &*st.collate_normalize : nullptr);
  describe_batch(plan, *opts.schema, *batch);
  batch->slot = index;
  point_at(*batch, **slot, opts);
  opts.status->add_collate(elapsed_ns(start), plan.samples.size());  // the writes into the slot
  return st.ring->submit(**slot, [channel = opts.channel, batch] {
    batch->ready_ns = monotonic_ns();
    channel->push(batch);
  });
}

void on_plan(feeder_pointer self, const feeder_options& opts, const batch_plan& plan) {
  auto& st = self->state;
  if (!st.ring) {
    return;  // the pipeline has already failed
  }
  auto start = std::chrono::steady_clock::now();
  if (auto ok = feed(st, opts, plan, start); !ok) {
    fail(opts, ok.error());
    return;
  }
  st.metrics->record(elapsed_ns(start));  // the writes and the submission
}

void on_release(feeder_pointer self, const feeder_options& opts, std::uint64_t slot) {
  auto& st = self->state;
  if (!st.ring) {
    return;
  }
  // Refused (and logged) so that a slot never enters the ring twice (two batches in one slot).
  if (auto ok = st.ring->reclaim(slot); !ok) {
    log("feeder")->error("{}: ignored", ok.error().what());
    return;
  }
  auto samples = static_cast<std::uint64_t>(st.batches[slot]->size());
  self->send(opts.batcher, atoms::credit::value, opts.gpu, std::uint64_t{1}, samples);
}

std::string figures(const feeder_state& st, const feeder_options& opts) {
  return "device=" + std::to_string(st.ring ? st.ring->engine().device() : -1) +
         " ready=" + std::to_string(opts.channel->size()) +
         " free_slots=" + std::to_string(st.ring ? st.ring->free_slots() : 0);
}

// The same as numbers, for /metrics.
std::vector<role_gauge> gauges(const feeder_state& st, const feeder_options& opts) {
  return {{"ready_batches", static_cast<std::int64_t>(opts.channel->size())},
          {"free_slots", static_cast<std::int64_t>(st.ring ? st.ring->free_slots() : 0)}};
}

feeder_actor::behavior_type feeder(feeder_pointer self, feeder_options opts) {
  auto& st = self->state;
  st.metrics = std::make_unique<actor_metrics>("feeder-" + std::to_string(opts.gpu));
  if (opts.collate_normalize && !opts.normalize) {
    st.collate_normalize.emplace(
        collate_normalize{opts.normalize_field, normalize_table(*opts.collate_normalize)});
  }
  auto layout = blob_layout::make(*opts.schema, opts.batch_size);
  auto ring = layout ? make_ring(opts) : expected<std::shared_ptr<slot_ring>>(layout.error());
  if (ring) {
    st.layout = std::move(*layout);
    st.ring = std::move(*ring);
    for (std::uint64_t i = 0; i < opts.slots; ++i) {
      st.batches.push_back(std::make_shared<host_batch>());
      st.batches.back()->owner = st.ring;
      st.batches.back()->schema = opts.schema;
    }
    self->send(opts.batcher, atoms::credit::value, opts.gpu, opts.slots, std::uint64_t{0});
  } else {
    fail(opts, error{ring.error().code(), feeder_name(opts) + ": " + ring.error().message()});
  }
  start_reporting(self, opts.report);
  return {
      [self, opts](atoms::batch, const batch_plan& plan) { on_plan(self, opts, plan); },
      [self, opts](atoms::release, std::uint64_t slot) { on_release(self, opts, slot); },
      [self, opts](atoms::tick) {
        report_and_rearm(self, opts.report, *self->state.metrics, figures(self->state, opts),
                         gauges(self->state, opts));
      },
  };
}

}  // namespace

feeder_actor spawn_feeder(caf::actor_system& sys, feeder_options options) {
  if (options.own_thread) {
    return sys.spawn<caf::detached>(feeder, std::move(options));
  }
  return sys.spawn(feeder, std::move(options));
}

}  // namespace conveyor
