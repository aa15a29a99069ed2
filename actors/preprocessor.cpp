#include "actors/preprocessor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>

#include "actors/sample_work.hpp"

namespace conveyor {
namespace {

struct preprocessor_state {
  static inline const char* name = "preprocessor";
  std::unique_ptr<actor_metrics> metrics;
  budget_figures budget;  ///< no hand-off until the batcher says otherwise
  bool permit = false;    ///< the batcher allows one hand-off
  std::uint64_t handoffs = 0;
  std::uint64_t kept = 0;  ///< over budget, finished here for want of a permit
};

using preprocessor_pointer = preprocessor_actor::stateful_pointer<preprocessor_state>;
using clock_type = std::chrono::steady_clock;

std::shared_ptr<sample_state> start_state(const transform_chain& chain, raw_sample& raw) {
  auto s = std::make_shared<sample_state>();
  s->sample_id = raw.ticket.sample_id;
  s->key = std::move(raw.key);
  s->epoch_seed = raw.ticket.epoch_seed;
  s->encoded = std::move(raw.bytes);
  s->multipart = raw.multipart;
  s->in_place = std::move(raw.in_place);
  s->source_pixels = raw.multipart ? 0 : header_pixels(s->encoded);
  chain.start(*s, raw.label);
  return s;
}

void fail(preprocessor_pointer self, const preprocessor_options& opts, const sample_ticket& ticket,
          std::string key, const error& e) {
  self->send(opts.batcher, atoms::failed::value, failure_of(ticket, std::move(key), e));
}

void hand_off(preprocessor_pointer self, const preprocessor_options& opts,
              const sample_ticket& ticket, std::shared_ptr<sample_state> s) {
  if (s->next_step == 0) {
    opts.status->count_early_handoff();
  }
  self->send(opts.batcher, atoms::handed_off::value, handoff{ticket, std::move(s)});
  self->state.permit = false;
  ++self->state.handoffs;
}

bool over_budget(preprocessor_pointer self, const preprocessor_options& opts,
                 clock_type::time_point start, sample_state& s) {
  if (!opts.hand_off || opts.chain.done(s)) {
    return false;
  }
  return past_budget(opts.chain, s, self->state.budget, elapsed_ns(start));
}

// Over budget: hand the sample off when a permit allows, else keep it (true: handed off).
bool try_hand_off(preprocessor_pointer self, const preprocessor_options& opts,
                  const sample_ticket& ticket, std::shared_ptr<sample_state>& s) {
  if (!self->state.permit) {
    ++self->state.kept;
    return false;
  }
  hand_off(self, opts, ticket, std::move(s));
  return true;
}

// How long to wait for an external step's work before the budget is looked at again: what is
// left of the budget, while a hand-off may still come; otherwise long slices (the step bounds
// its work itself).
std::chrono::nanoseconds wait_slice(preprocessor_pointer self, const preprocessor_options& opts,
                                    clock_type::time_point start, bool kept) {
  constexpr std::chrono::nanoseconds shortest = std::chrono::milliseconds(1);
  constexpr std::chrono::nanoseconds longest = std::chrono::seconds(1);
  if (!opts.hand_off || kept) {
    return longest;
  }
  const auto left = std::chrono::nanoseconds(self->state.budget.budget_ns - elapsed_ns(start));
  return std::clamp(left, shortest, longest);
}

void prepare(preprocessor_pointer self, const preprocessor_options& opts, raw_sample& raw) {
  auto start = clock_type::now();
  const auto& ctx = opts.context;
  activity_scope busy(*ctx.slot, raw.ticket.attempt);
  if (ctx.faults) {
    ctx.faults->maybe_crash(worker_role::preprocessor, raw.ticket);
    ctx.faults->maybe_delay(raw.ticket, *ctx.slot);
  }
  if (raw.error_code != 0) {
    self->send(opts.batcher, atoms::failed::value,
               sample_failure{raw.ticket, std::move(raw.key), std::move(raw.error_message)});
    return;
  }
  auto ticket = raw.ticket;
  auto s = start_state(opts.chain, raw);
  bool kept = false;  // over budget without a permit: finished here, asked once
  while (!opts.chain.done(*s)) {
    if (!kept && over_budget(self, opts, start, *s)) {
      if (try_hand_off(self, opts, ticket, s)) {
        return;
      }
      kept = true;
    }
    if (opts.chain.next_is_external(*s)) {
      auto ended =
          advance_external(opts.chain, *s, *opts.status, wait_slice(self, opts, start, kept));
      if (!ended) {
        fail(self, opts, ticket, std::move(s->key), ended.error());
        return;
      }
      if (opts.status->stopping()) {
        return;  // shutdown: the work in another process is let go (its worker killed)
      }
      continue;  // ended, or still running: the budget is looked at again
    }
    if (auto ok = run_step(opts.chain, *s, *opts.status); !ok) {
      fail(self, opts, ticket, std::move(s->key), ok.error());
      return;
    }
  }
  auto prepared = make_prepared(opts.chain, *opts.schema, ticket, *s, false);
  if (!prepared) {
    fail(self, opts, ticket, std::move(s->key), prepared.error());
    return;
  }
  self->send(opts.batcher, atoms::prepared::value, std::move(*prepared));
  self->state.metrics->record(elapsed_ns(start));
}

preprocessor_actor::behavior_type preprocessor(preprocessor_pointer self,
                                               preprocessor_options opts) {
  auto name = opts.context.name(worker_role::preprocessor);
  self->state.metrics = std::make_unique<actor_metrics>(name);
  exit_on_exception(self, name);
  start_reporting(self, opts.report);
  return {
      // Mutable: the reader's message is not shared, so its bytes move out without a copy.
      [self, opts](atoms::prepare, raw_sample& raw) { prepare(self, opts, raw); },
      [self](atoms::budget, const budget_figures& b) { self->state.budget = b; },
      [self](atoms::permit) { self->state.permit = true; },
      [self, opts](atoms::tick) {
        if (opts.context.index == 0) {  // the first preprocessor speaks for the workers
          report_processes(self, opts.report, opts.chain.external_processes());
        }
        report_and_rearm(self, opts.report, *self->state.metrics,
                         "handoffs=" + std::to_string(self->state.handoffs) +
                             " kept=" + std::to_string(self->state.kept));
      },
  };
}

}  // namespace

preprocessor_actor spawn_preprocessor(caf::actor_system& sys, preprocessor_options options) {
  return sys.spawn<caf::detached>(preprocessor, std::move(options));
}

}  // namespace conveyor
