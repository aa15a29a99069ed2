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

// Stragglers report as worker -1: they hold none of the preprocessors' per-worker credit.
constexpr std::int32_t straggler_worker = -1;

void finish(straggler_pointer self, const straggler_options& opts, const handoff& h) {
  auto start = std::chrono::steady_clock::now();
  auto& s = *h.state;
  while (!opts.chain.done(s)) {
    if (auto ok = run_step(opts.chain, s, *opts.status); !ok) {
      self->send(opts.batcher, atoms::failed::value, straggler_worker,
                 sample_failure{h.ticket, std::move(s.key), ok.error().what()});
      return;
    }
  }
  self->send(opts.batcher, atoms::prepared::value, straggler_worker,
             make_prepared(h.ticket, s, true));
  self->state.metrics->record(elapsed_ns(start));
}

straggler_actor::behavior_type straggler(straggler_pointer self, straggler_options opts) {
  self->state.metrics = std::make_unique<actor_metrics>("straggler-" + std::to_string(opts.index));
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
