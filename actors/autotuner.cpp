#include "actors/autotuner.hpp"

#include <caf/all.hpp>

#include <optional>

#include "core/base/log.hpp"
#include "core/base/memory_bound.hpp"
#include "core/delivery/status_totals.hpp"
#include "core/metrics/cpu_usage.hpp"

namespace conveyor {
namespace {

struct autotuner_state {
  static inline const char* name = "autotuner";
  std::unique_ptr<analysis::autotuner> tuner;
  status_totals last;
  std::optional<cpu_times> cpu;
};

using autotuner_pointer = autotuner_actor::stateful_pointer<autotuner_state>;

// The cores the rest of the machine kept busy between `a` and `b`, over `seconds`.
double other_load(const std::optional<cpu_times>& a, const std::optional<cpu_times>& b,
                  double seconds) {
  if (!a || !b || seconds <= 0) {
    return 0;
  }
  const double others = (b->machine_busy_s - a->machine_busy_s) - (b->process_s - a->process_s);
  return std::max(0.0, others / seconds);
}

// Reads the interval that ended now and acts on what the tuner decides.
void on_tick(autotuner_pointer self, const autotuner_options& opts) {
  auto& st = self->state;
  const auto counts = st.tuner->counts();
  auto now = take_totals(*opts.status, opts.gpus);
  auto cpu = read_cpu_times();
  analysis::tuning_reading r;
  r.figures = between(st.last, now, opts.gpus, counts.preprocessors, counts.readers);
  // Prepared, not delivered: delivered samples move a batch at a time, and a batch of 64 at
  // 200 samples/s made a judgement of 3 s read anywhere from 150 to 200 samples/s.
  r.samples = now.prepared - st.last.prepared;
  r.other_cpu = other_load(st.cpu, cpu, r.figures.seconds);
  r.cores = usable_cores();
  const auto available = available_memory_bytes();
  r.memory_short = available && *available < machine_memory_bytes() / 10;
  st.last = now;
  st.cpu = cpu;
  if (r.figures.seconds <= 0) {
    return;
  }
  auto change = st.tuner->observe(r);
  if (!change) {
    return;
  }
  log("autotune")->info("{}: {}", analysis::describe(change->counts), change->reason);
  if (change->counts != counts) {
    self->send(opts.batcher, atoms::tune::value, change->counts);
    opts.status->note_tuning(change->counts, st.tuner->changes());
  }
}

autotuner_actor::behavior_type autotuner(autotuner_pointer self, autotuner_options opts) {
  auto& st = self->state;
  st.tuner =
      std::make_unique<analysis::autotuner>(opts.start, opts.least, opts.most, opts.settings);
  st.last = take_totals(*opts.status, opts.gpus);
  st.cpu = read_cpu_times();
  opts.status->note_tuning(st.tuner->counts(), 0);
  log("autotune")
      ->info("starting at {} (at most {})", analysis::describe(st.tuner->counts()),
             analysis::describe(opts.most));
  self->send(opts.batcher, atoms::tune::value, st.tuner->counts());
  self->delayed_send(self, opts.every, atoms::tick::value);
  return {
      [self, opts](atoms::tick) {
        on_tick(self, opts);
        self->delayed_send(self, opts.every, atoms::tick::value);
      },
  };
}

}  // namespace

autotuner_actor spawn_autotuner(caf::actor_system& sys, autotuner_options options) {
  return sys.spawn(autotuner, std::move(options));
}

}  // namespace conveyor
