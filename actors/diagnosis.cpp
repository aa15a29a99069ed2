#include "actors/diagnosis.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <numeric>

#include "core/base/log.hpp"
#include "core/base/monotonic_clock.hpp"

namespace conveyor {
namespace {

using clock = std::chrono::steady_clock;

// The pipeline's running totals, at one moment.
struct totals {
  clock::time_point at = clock::now();
  double trainer_wait_s = 0;
  double prep_busy_s = 0;
  double read_busy_s = 0;
  double window_full_s = 0;
  std::uint64_t delivered = 0;
};

totals take_totals(const diagnosis_options& opts) {
  totals t;
  const auto& status = *opts.status;
  for (int g = 0; g < opts.gpus; ++g) {
    t.trainer_wait_s += std::chrono::duration<double>(status.channel(g)->waited()).count();
  }
  auto figures = status.figures();
  t.prep_busy_s = static_cast<double>(std::accumulate(figures.step_ns.begin(),
                                                      figures.step_ns.end(), std::int64_t{0})) /
                  1e9;
  t.read_busy_s = static_cast<double>(status.read_ns()) / 1e9;
  t.window_full_s = static_cast<double>(status.window().full_until(monotonic_ns())) / 1e9;
  t.delivered = figures.totals.delivered;
  return t;
}

analysis::interval_figures between(const totals& a, const totals& b,
                                   const diagnosis_options& opts) {
  analysis::interval_figures f;
  f.seconds = std::chrono::duration<double>(b.at - a.at).count();
  f.trainer_wait_s = b.trainer_wait_s - a.trainer_wait_s;
  f.trainers = opts.gpus;
  f.prep_busy_s = b.prep_busy_s - a.prep_busy_s;
  f.prep_workers = opts.preprocessors;
  f.read_busy_s = b.read_busy_s - a.read_busy_s;
  f.readers = opts.readers;
  f.window_full_s = b.window_full_s - a.window_full_s;
  return f;
}

void tell(analysis::bottleneck b, const analysis::interval_figures& f) {
  log("diagnosis")
      ->info(
          "now {}: in the last {:.1f} s the trainers waited {:.0f}% of the time; preprocessors "
          "busy {:.0f}%, readers {:.0f}%; the window full {:.0f}% of the time",
          analysis::bound_name(b), f.seconds, 100 * f.wait_share(), 100 * f.prep_share(),
          100 * f.read_share(), 100 * std::min(1.0, f.window_full_share()));
}

struct diagnosis_state {
  static inline const char* name = "diagnosis";
  totals last;
  std::optional<analysis::bottleneck> current;
};

diagnosis_actor::behavior_type diagnosis(diagnosis_actor::stateful_pointer<diagnosis_state> self,
                                         diagnosis_options opts) {
  self->state.last = take_totals(opts);
  self->delayed_send(self, opts.every, atoms::tick::value);
  return {
      [self, opts](atoms::tick) {
        auto now = take_totals(opts);
        auto f = between(self->state.last, now, opts);
        const auto taken = now.delivered - self->state.last.delivered;
        self->state.last = now;
        self->delayed_send(self, opts.every, atoms::tick::value);
        if (f.seconds <= 0) {
          return;
        }
        auto b = analysis::classify(f);
        opts.status->note_bottleneck(b, f.seconds, taken);
        if (self->state.current != b) {
          self->state.current = b;
          tell(b, f);
        }
      },
  };
}

}  // namespace

diagnosis_actor spawn_diagnosis(caf::actor_system& sys, diagnosis_options options) {
  return sys.spawn(diagnosis, std::move(options));
}

}  // namespace conveyor
