#include "actors/straggler.hpp"

#include <caf/all.hpp>

#include "actors/sample_work.hpp"

namespace conveyor {
namespace {

struct straggler_state {
  static inline const char* name = "straggler";
  std::unique_ptr<actor_metrics> metrics;
};

using straggler_pointer = straggler_actor::stateful_pointer<straggler_state>;

/// The longest wait for work in another process between looks at whether the pipeline stops.
constexpr std::chrono::nanoseconds wait_slice = std::chrono::seconds(1);

void finish(straggler_pointer self, const straggler_options& opts, const handoff& h) {
  auto start = std::chrono::steady_clock::now();
  const auto& ctx = opts.context;
  activity_scope busy(*ctx.slot, h.ticket.attempt);
  if (ctx.faults) {
    ctx.faults->maybe_crash(worker_role::straggler, h.ticket);
  }
  auto& s = *h.state;  // after a crash the batcher issues the sample again from its bytes
  auto failed = [&](const error& e) {
    self->send(opts.batcher, atoms::failed::value, failure_of(h.ticket, std::move(s.key), e));
  };
  while (!opts.chain.done(s)) {
    if (opts.status->stopping()) {
      s.pending.reset();  // work in another process is let go (its worker killed)
      return;
    }
    if (auto ok = step_or_wait(opts.chain, s, *opts.status, wait_slice); !ok) {
      failed(ok.error());
      return;
    }
  }
  auto prepared = make_prepared(opts.chain, *opts.schema, h.ticket, s, true);
  if (!prepared) {
    failed(prepared.error());
    return;
  }
  self->send(opts.batcher, atoms::prepared::value, std::move(*prepared));
  self->state.metrics->record(elapsed_ns(start));
}

straggler_actor::behavior_type straggler(straggler_pointer self, straggler_options opts) {
  auto name = opts.context.name(worker_role::straggler);
  self->state.metrics = std::make_unique<actor_metrics>(name);
  exit_on_exception(self, name);
  start_reporting(self, opts.report);
  return {
      [self, opts](atoms::finish, const handoff& h) { finish(self, opts, h); },
      [self, opts](atoms::tick) { report_and_rearm(self, opts.report, *self->state.metrics); },
  };
}

}  // namespace

straggler_actor spawn_straggler(caf::actor_system& sys, straggler_options options) {
  return sys.spawn<caf::detached>(straggler, std::move(options));
}

}  // namespace conveyor
