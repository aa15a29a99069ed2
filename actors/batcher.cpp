#include "actors/batcher.hpp"

#include <caf/all.hpp>
#include "core/log.hpp"

#include <unordered_map>

namespace conveyor {
namespace {

struct batcher_state {
  static inline const char* name = "batcher";
  std::unique_ptr<batcher_core> core;
  std::unique_ptr<actor_metrics> metrics;  ///< per-sample latency, dispatch to prepared
  latency_tracker assembly;  ///< per batch: how long its oldest sample waited in the batcher
  std::vector<reader_actor> readers;
  std::vector<preprocessor_actor> preprocessors;
  std::vector<feeder_actor> feeders;
  std::size_t next_reader = 0;
  std::unordered_map<std::uint64_t, std::chrono::steady_clock::time_point> dispatched_at;
};

using batcher_pointer = batcher_actor::stateful_pointer<batcher_state>;

// Dispatch time is keyed by (epoch, seq): unique among samples in flight.
std::uint64_t flight_key(const sample_ticket& t) {
  return (t.epoch << 40U) ^ t.seq;
}

void publish(batcher_pointer self, const batcher_options& opts) {
  const auto& core = *self->state.core;
  auto budget = core.budget().budget_ns;
  opts.status->publish({core.ledger().totals(), core.ledger().quarantined(), core.peak_in_flight(),
                        core.handoffs(), budget == latency_budget::no_hand_off ? 0 : budget,
                        core.finished()});
}

// Tells every preprocessor the new budget when it changed.
void broadcast_budget(batcher_pointer self) {
  auto& st = self->state;
  if (auto b = st.core->take_budget_update()) {
    for (const auto& p : st.preprocessors) {
      self->send(p, atoms::budget::value, *b);
    }
  }
}

void record_assembly(latency_tracker& assembly, const batch_plan& plan,
                     std::chrono::steady_clock::time_point now) {
  if (plan.samples.empty()) {
    return;
  }
  auto oldest = plan.samples.front()->prepared_at;
  for (const auto& s : plan.samples) {
    oldest = std::min(oldest, s->prepared_at);
  }
  assembly.record(now - oldest);
}

// Sends whatever the core allows now: tickets to readers, batches to feeders.
void pump(batcher_pointer self, const batcher_options& opts) {
  auto& st = self->state;
  if (st.feeders.empty()) {
    return;  // not connected yet
  }
  broadcast_budget(self);
  auto now = std::chrono::steady_clock::now();
  for (const auto& d : st.core->take_dispatches()) {
    st.dispatched_at[flight_key(d.ticket)] = now;
    const auto& reader = st.readers[st.next_reader++ % st.readers.size()];
    self->send(reader, atoms::read::value, d.ticket,
               st.preprocessors[static_cast<std::size_t>(d.worker)]);
  }
  bool finished_before = st.core->finished();
  auto plans = st.core->take_batches();
  if (st.core->finished() && !finished_before) {
    // Published before the last batches go out, so a trainer that has seen the last batch
    // also sees the final figures.
    log("batcher")->info("every epoch handed to the feeders");
    publish(self, opts);
  }
  for (auto& plan : plans) {
    record_assembly(st.assembly, plan, now);
    auto gpu = static_cast<std::size_t>(plan.gpu);
    self->send(st.feeders[gpu], atoms::batch::value, std::move(plan));
  }
}

void record_latency(batcher_pointer self, const sample_ticket& t) {
  auto& st = self->state;
  auto it = st.dispatched_at.find(flight_key(t));
  if (it != st.dispatched_at.end()) {
    st.metrics->record(elapsed_ns(it->second));
    st.dispatched_at.erase(it);
  }
}

std::string milliseconds(std::int64_t ns) {
  return std::to_string(ns / 1000000) + "." + std::to_string(ns / 100000 % 10) + "ms";
}

std::string budget_text(const budget_figures& b) {
  return b.budget_ns == latency_budget::no_hand_off ? "off" : milliseconds(b.budget_ns);
}

// Role figures for the monitor line, with the batch assembly latency (oldest sample's wait).
std::string extra_figures(const batcher_core& core, latency_tracker& assembly) {
  auto totals = core.ledger().totals();
  return "in_flight=" + std::to_string(core.in_flight()) + "/" +
         std::to_string(core.settings().window_samples) +
         " delivered=" + std::to_string(totals.delivered) +
         " quarantined=" + std::to_string(totals.quarantined) +
         " handoffs=" + std::to_string(core.handoffs()) + " budget=" + budget_text(core.budget()) +
         " assembly_p50=" + milliseconds(assembly.percentile(50)) +
         " assembly_p99=" + milliseconds(assembly.percentile(99)) +
         " policy=" + std::string(core.policy_name());
}

batcher_actor::behavior_type batcher(batcher_pointer self, batcher_options opts) {
  auto& st = self->state;
  st.core = std::make_unique<batcher_core>(
      opts.settings,
      make_batch_policy(opts.policy, {opts.settings.batch_size, opts.settings.gpus}));
  st.metrics = std::make_unique<actor_metrics>("batcher");
  start_reporting(self, opts.report);
  return {
      [self, opts](atoms::connect, std::vector<reader_actor>& readers,
                   std::vector<preprocessor_actor>& preprocessors,
                   std::vector<feeder_actor>& feeders) {
        self->state.readers = std::move(readers);
        self->state.preprocessors = std::move(preprocessors);
        self->state.feeders = std::move(feeders);
        pump(self, opts);
      },
      [self, opts](atoms::prepared, std::int32_t worker, prepared_ptr& sample) {
        record_latency(self, sample->ticket);
        self->state.core->on_prepared(std::move(sample), worker);
        pump(self, opts);
      },
      [self, opts](atoms::handed_off, std::int32_t worker, const sample_ticket&) {
        self->state.core->on_handed_off(worker);
        pump(self, opts);
      },
      [self, opts](atoms::failed, std::int32_t worker, sample_failure& f) {
        log("batcher")->warn("quarantined sample {} (epoch {}): {}", f.key, f.ticket.epoch,
                             f.reason);
        record_latency(self, f.ticket);
        self->state.core->on_failed(f.ticket, worker, std::move(f.key), std::move(f.reason));
        publish(self, opts);
        pump(self, opts);
      },
      [self, opts](atoms::credit, std::int32_t gpu, std::uint64_t batches, std::uint64_t released) {
        self->state.core->on_credit(gpu, batches);
        self->state.core->on_released(released);
        pump(self, opts);
      },
      [self, opts](atoms::tick) {
        report_and_rearm(self, opts.report, *self->state.metrics,
                         extra_figures(*self->state.core, self->state.assembly));
      },
  };
}

}  // namespace

batcher_actor spawn_batcher(caf::actor_system& sys, batcher_options options) {
  return sys.spawn(batcher, std::move(options));
}

}  // namespace conveyor
