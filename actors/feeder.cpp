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
  std::optional<normalize_table> collate_normalize;  ///< feeder_options::collate_normalize

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

/// The layout of `plan` in a slot (zeros for an empty plan). Tensors are CHW (host_tensor);
/// `normalized`: written as float32.
batch_layout layout_of(const batch_plan& plan, bool normalized) {
  batch_layout l;
  if (!plan.samples.empty()) {
    const auto& t = plan.samples.front()->tensor;
    l = {normalized ? dtype::float32 : t.type,
         static_cast<int>(plan.samples.size()),
         t.channels,
         t.height,
         t.width,
         pixel_layout::chw};
  }
  return l;
}

/// What normalising at collate needs: uint8 samples of 3 channels (the chain's to_uint8).
expected<void> check_normalizable(const batch_plan& plan, const feeder_options& opts) {
  if (plan.samples.empty()) {
    return {};
  }
  const auto& t = plan.samples.front()->tensor;
  if (t.type != dtype::uint8 || t.channels != 3) {
    return error{errc::invalid_config,
                 feeder_name(opts) +
                     ": normalize at collate needs uint8 samples of 3 channels, "
                     "got " +
                     std::to_string(t.channels) + " channels of " + std::string(name_of(t.type))};
  }
  return {};
}

/// Where the trainer finds the slot's batch.
void point_at(host_batch& batch, const slot_output& out) {
  batch.device = out.device;
  batch.type = out.type;
  batch.bytes.clear();
  batch.device_data = out.device >= 0 ? out.data : nullptr;
  batch.external = out.device >= 0 ? nullptr : static_cast<std::uint8_t*>(out.data);
}

/// Writes the plan into a slot (counted as the samples' collate time from `start`) and submits
/// it; the ring hands the batch to the trainer once it is complete on the device.
expected<void> feed(feeder_state& st, const feeder_options& opts, const batch_plan& plan,
                    std::chrono::steady_clock::time_point start) {
  if (auto ok = check_uniform(plan); !ok) {  // the ring's own errors name the feeder already
    return error{ok.error().code(), feeder_name(opts) + ": " + ok.error().message()};
  }
  const auto& table = st.collate_normalize;
  if (auto ok = table ? check_normalizable(plan, opts) : expected<void>{}; !ok) {
    return ok;
  }
  auto slot = st.ring->acquire(layout_of(plan, table.has_value()));
  if (!slot) {
    return std::move(slot).error();
  }
  const auto index = (*slot)->index();
  if (table) {
    write_normalized_samples(plan, *table, (*slot)->sample(0));
  } else {
    write_samples(plan, (*slot)->sample(0));
  }
  auto batch = st.batches[index];
  describe_batch(plan, *batch);
  batch->slot = index;
  point_at(*batch, (*slot)->output());
  opts.status->add_collate(elapsed_ns(start), plan.samples.size());  // the writes into the slot
  auto what = "batch " + std::to_string(plan.index) + " of epoch " + std::to_string(plan.epoch) +
              " (slot " + std::to_string(index) + ")";
  return st.ring->submit(**slot, std::move(what), [channel = opts.channel, batch] {
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

feeder_actor::behavior_type feeder(feeder_pointer self, feeder_options opts) {
  auto& st = self->state;
  st.metrics = std::make_unique<actor_metrics>("feeder-" + std::to_string(opts.gpu));
  if (opts.collate_normalize && !opts.normalize) {
    st.collate_normalize.emplace(*opts.collate_normalize);
  }
  if (auto ring = make_ring(opts); ring) {
    st.ring = std::move(*ring);
    for (std::uint64_t i = 0; i < opts.slots; ++i) {
      st.batches.push_back(std::make_shared<host_batch>());
      st.batches.back()->owner = st.ring;
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
        report_and_rearm(self, opts.report, *self->state.metrics, figures(self->state, opts));
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
