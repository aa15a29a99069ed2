#include "actors/batcher.hpp"

#include <caf/all.hpp>

#include <deque>
#include <unordered_map>

#include "actors/worker_handles.hpp"
#include "core/base/log.hpp"

namespace conveyor {
namespace {

struct batcher_state {
  static inline const char* name = "batcher";
  std::unique_ptr<batcher_core> core;
  std::unique_ptr<actor_metrics> metrics;  ///< per-sample latency, dispatch to prepared
  latency_tracker assembly;  ///< per batch: how long its oldest sample waited in the batcher
  std::unique_ptr<worker_handles> workers;
  std::vector<feeder_actor> feeders;
  std::deque<handoff> parked;  ///< handed off, waiting for a straggler actor to come up
  std::size_t reported = 0;    ///< quarantine entries written to the report file
  std::unordered_map<std::uint64_t, std::chrono::steady_clock::time_point> dispatched_at;
};

using batcher_pointer = batcher_actor::stateful_pointer<batcher_state>;

// Dispatch time is keyed by (epoch, seq): unique among samples in flight (a re-issued
// sample keeps its first dispatch time).
std::uint64_t flight_key(const sample_ticket& t) {
  return (t.epoch << 40U) ^ t.seq;
}

// The ledger's figures; the quarantine list only when `with_quarantined` (it may be long).
pipeline_figures figures_of(const batcher_core& core, bool with_quarantined) {
  auto budget = core.budget().budget_ns;
  return {core.ledger().totals(),
          with_quarantined ? core.ledger().quarantined() : std::vector<quarantine_entry>{},
          core.peak_in_flight(),
          core.handoffs(),
          budget == latency_budget::no_hand_off ? 0 : budget,
          core.finished(),
          core.retries(),
          core.step_ns(),
          core.prepared(),
          core.in_flight(),
          core.sample_work()};
}

// Logs the samples quarantined since the last call, appends them to the report file, and
// publishes the figures.
void note_quarantines(batcher_pointer self, const batcher_options& opts) {
  auto& st = self->state;
  const auto& all = st.core->ledger().quarantined();
  for (; st.reported < all.size(); ++st.reported) {
    const auto& q = all[st.reported];
    log("batcher")->warn("quarantined sample {} (epoch {}): {}", q.key, q.epoch, q.reason);
    if (opts.quarantine) {
      opts.quarantine->append(q);
    }
  }
  opts.status->publish(figures_of(*st.core, true));
}

// Sends parked hand-offs to straggler actors that are up; drops stale ones.
void route_parked(batcher_pointer self) {
  auto& st = self->state;
  for (auto it = st.parked.begin(); it != st.parked.end();) {
    int to = st.core->route_handoff(it->ticket);
    if (to == no_straggler) {
      ++it;
      continue;
    }
    if (to >= 0) {
      self->send(st.workers->stragglers[static_cast<std::size_t>(to)], atoms::finish::value,
                 std::move(*it));
    }
    it = st.parked.erase(it);
  }
}

// Tells every preprocessor the new budget when it changed (one that is not up yet gets it
// when it comes up).
void broadcast_budget(batcher_pointer self) {
  auto& st = self->state;
  if (auto b = st.core->take_budget_update()) {
    for (const auto& p : st.workers->preprocessors) {
      if (p) {
        self->send(p, atoms::budget::value, *b);
      }
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

// Sends hand-off permits to the preprocessors the core grants one now.
void grant_permits(batcher_pointer self) {
  auto& st = self->state;
  for (int w : st.core->take_permits()) {
    self->send(st.workers->preprocessors[static_cast<std::size_t>(w)], atoms::permit::value);
  }
}

// Tells opts.will_read the samples the readers will be handed next, a window ahead.
void announce_reads(batcher_pointer self, const batcher_options& opts) {
  if (!opts.will_read) {
    return;
  }
  auto ahead = self->state.core->take_read_ahead(self->state.core->settings().window_samples);
  if (!ahead.ids.empty()) {
    opts.will_read(ahead.epoch, ahead.ids);
  }
}

// Sends whatever the core allows now: tickets to readers, batches to feeders.
void pump(batcher_pointer self, const batcher_options& opts) {
  auto& st = self->state;
  if (st.feeders.empty()) {
    return;  // not connected yet
  }
  broadcast_budget(self);
  grant_permits(self);
  auto now = std::chrono::steady_clock::now();
  auto dispatches = st.core->take_dispatches();
  announce_reads(self, opts);
  for (const auto& d : dispatches) {
    st.dispatched_at[flight_key(d.ticket)] = now;
    self->send(st.workers->readers[static_cast<std::size_t>(d.reader)], atoms::read::value,
               d.ticket, st.workers->preprocessors[static_cast<std::size_t>(d.worker)]);
  }
  bool finished_before = st.core->finished();
  auto plans = st.core->take_batches();
  if (st.core->finished() && !finished_before) {
    log("batcher")->info("every epoch handed to the feeders");
  }
  if (!plans.empty()) {
    // Published before the batches go out, so the figures a trainer reads (report()) count
    // every batch it has been handed, the last one included.
    opts.status->publish_progress(figures_of(*st.core, false));
  }
  opts.status->note_window(st.core->window_full());
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

void on_worker_up(batcher_pointer self, worker_role role, std::int32_t index,
                  const caf::actor& handle) {
  auto& st = self->state;
  st.workers->set(role, index, handle);
  st.core->on_worker_up(role, index);
  if (role == worker_role::preprocessor) {
    self->send(st.workers->preprocessors[static_cast<std::size_t>(index)], atoms::budget::value,
               st.core->budget());
  } else if (role == worker_role::straggler) {
    route_parked(self);
  }
}

void on_worker_down(batcher_pointer self, const batcher_options& opts, worker_role role,
                    std::int32_t index, std::uint64_t culprit, std::uint64_t done_through,
                    const std::string& reason) {
  auto held = self->state.core->on_worker_down(role, index, culprit, reason, done_through);
  log("batcher")->info("{} is down: issuing its {} sample(s) again", worker_name(role, index),
                       held);
  note_quarantines(self, opts);
}

// The autotuner's counts: the pools' active workers and the window.
void retune(batcher_core& core, const analysis::tuning& t) {
  core.set_active(worker_role::preprocessor, t.preprocessors);
  core.set_active(worker_role::straggler, t.stragglers);
  core.set_active(worker_role::reader, t.readers);
  core.set_window(t.window);
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
         " filtered=" + std::to_string(totals.filtered) +
         " handoffs=" + std::to_string(core.handoffs()) +
         " handed_out=" + std::to_string(core.handed_out()) + "/" +
         std::to_string(core.handoff_limit()) + " retries=" + std::to_string(core.retries()) +
         " budget=" + budget_text(core.budget()) +
         " assembly_p50=" + milliseconds(assembly.percentile(50)) +
         " assembly_p99=" + milliseconds(assembly.percentile(99)) +
         " policy=" + std::string(core.policy_name()) +
         " active=" + std::to_string(core.active(worker_role::preprocessor)) + "/" +
         std::to_string(core.active(worker_role::straggler)) + "/" +
         std::to_string(core.active(worker_role::reader));
}

// The window and the pools' active counts as numbers, for /metrics.
std::vector<role_gauge> gauges(const batcher_core& core) {
  return {{"window_samples", static_cast<std::int64_t>(core.settings().window_samples)},
          {"handed_out", static_cast<std::int64_t>(core.handed_out())},
          {"active_preprocessors", core.active(worker_role::preprocessor)},
          {"active_stragglers", core.active(worker_role::straggler)},
          {"active_readers", core.active(worker_role::reader)}};
}

batcher_actor::behavior_type batcher(batcher_pointer self, batcher_options opts) {
  auto& st = self->state;
  st.core = std::make_unique<batcher_core>(
      opts.settings,
      make_batch_policy(opts.policy, {opts.settings.batch_size, opts.settings.gpus, true,
                                      opts.settings.resume ? opts.settings.resume->first_epoch : 0,
                                      opts.settings.buckets}),
      opts.name_sample);
  st.workers = std::make_unique<worker_handles>(opts.settings.readers, opts.settings.workers,
                                                opts.settings.stragglers);
  st.metrics = std::make_unique<actor_metrics>("batcher");
  start_reporting(self, opts.report);
  return {
      [self, opts](atoms::connect, std::vector<feeder_actor>& feeders) {
        self->state.feeders = std::move(feeders);
        pump(self, opts);
      },
      [self, opts](atoms::prepared, prepared_ptr& sample) {
        auto ticket = sample->ticket;
        if (self->state.core->on_prepared(std::move(sample))) {
          opts.status->count_prepared();
          record_latency(self, ticket);
          pump(self, opts);
        }
      },
      [self, opts](atoms::handed_off, handoff& h) {
        if (self->state.core->on_handed_off(h.ticket)) {
          self->state.parked.push_back(std::move(h));
          route_parked(self);
          pump(self, opts);
        }
      },
      [self, opts](atoms::failed, sample_failure& f) {
        if (f.filtered) {
          if (self->state.core->on_filtered(f.ticket) == failure_outcome::filtered) {
            record_latency(self, f.ticket);
            log("batcher")->debug("filtered sample {} (epoch {}): {}", f.key, f.ticket.epoch,
                                  f.reason);
          }
          pump(self, opts);
          return;
        }
        auto outcome = self->state.core->on_failed(f.ticket, f.reason);
        if (outcome == failure_outcome::retried) {
          log("batcher")->info("sample {} failed (try {}), trying again: {}", f.key,
                               f.ticket.retry + 1, f.reason);
        } else if (outcome == failure_outcome::quarantined) {
          record_latency(self, f.ticket);
          note_quarantines(self, opts);
        }
        pump(self, opts);
      },
      [self, opts](atoms::worker_up, std::int32_t role, std::int32_t index, caf::actor& handle) {
        on_worker_up(self, static_cast<worker_role>(role), index, handle);
        pump(self, opts);
      },
      [self, opts](atoms::worker_down, std::int32_t role, std::int32_t index, std::uint64_t culprit,
                   std::uint64_t done_through, std::string& reason) {
        on_worker_down(self, opts, static_cast<worker_role>(role), index, culprit, done_through,
                       reason);
        pump(self, opts);
      },
      [self, opts](atoms::credit, std::int32_t gpu, std::uint64_t batches, std::uint64_t released) {
        self->state.core->on_credit(gpu, batches);
        self->state.core->on_released(released);
        pump(self, opts);
      },
      [self, opts](atoms::tune, const analysis::tuning& t) {
        retune(*self->state.core, t);
        pump(self, opts);
      },
      [self, opts](atoms::tick) {
        report_and_rearm(self, opts.report, *self->state.metrics,
                         extra_figures(*self->state.core, self->state.assembly),
                         gauges(*self->state.core));
      },
  };
}

}  // namespace

batcher_actor spawn_batcher(caf::actor_system& sys, batcher_options options) {
  return sys.spawn(batcher, std::move(options));
}

}  // namespace conveyor
