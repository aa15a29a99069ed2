#include "actors/diagnosis.hpp"

#include <caf/all.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/base/log.hpp"
#include "core/delivery/status_totals.hpp"

namespace conveyor {
namespace {

// "now prep-bound: in the last 1.0 s the trainers waited ...".
std::string diagnosis_line(analysis::bottleneck b, const analysis::interval_figures& f) {
  return fmt::format(
      "now {}: in the last {:.1f} s the trainers waited {:.0f}% of the time; preprocessors "
      "busy {:.0f}%, readers {:.0f}%; the window full {:.0f}% of the time",
      analysis::bound_name(b), f.seconds, 100 * f.wait_share(), 100 * f.prep_share(),
      100 * f.read_share(), 100 * std::min(1.0, f.window_full_share()));
}

struct diagnosis_state {
  static inline const char* name = "diagnosis";
  status_totals last;
  std::optional<analysis::bottleneck> current;
};

diagnosis_actor::behavior_type diagnosis(diagnosis_actor::stateful_pointer<diagnosis_state> self,
                                         diagnosis_options opts) {
  self->state.last = take_totals(*opts.status, opts.gpus);
  self->delayed_send(self, opts.every, atoms::tick::value);
  return {
      [self, opts](atoms::tick) {
        auto now = take_totals(*opts.status, opts.gpus);
        // With autotune, the pools' active counts.
        const auto tuned = opts.status->tuning();
        auto f = between(self->state.last, now, opts.gpus,
                         tuned ? tuned->first.preprocessors : opts.preprocessors,
                         tuned ? tuned->first.readers : opts.readers);
        const auto taken = now.delivered - self->state.last.delivered;
        self->state.last = now;
        self->delayed_send(self, opts.every, atoms::tick::value);
        if (f.seconds <= 0) {
          return;
        }
        auto b = analysis::classify(f);
        opts.status->note_bottleneck(b, f.seconds, taken);
        auto line = diagnosis_line(b, f);
        if (self->state.current != b) {
          self->state.current = b;
          log("diagnosis")->info("{}", line);
        }
        opts.status->note_diagnosis(f, std::move(line));
      },
  };
}

}  // namespace

diagnosis_actor spawn_diagnosis(caf::actor_system& sys, diagnosis_options options) {
  return sys.spawn(diagnosis, std::move(options));
}

}  // namespace conveyor
