#include "core/delivery/status_totals.hpp"

#include <numeric>

#include "core/base/monotonic_clock.hpp"

namespace conveyor {

status_totals take_totals(const pipeline_status& status, int gpus) {
  status_totals t;
  for (int g = 0; g < gpus; ++g) {
    t.trainer_wait_s += std::chrono::duration<double>(status.channel(g)->waited()).count();
  }
  auto figures = status.figures();
  t.prep_busy_s = static_cast<double>(std::accumulate(figures.step_ns.begin(),
                                                      figures.step_ns.end(), std::int64_t{0})) /
                  1e9;
  t.read_busy_s = static_cast<double>(status.read_ns()) / 1e9;
  t.window_full_s = static_cast<double>(status.window().full_until(monotonic_ns())) / 1e9;
  t.delivered = figures.totals.delivered;
  t.prepared = status.prepared_now();
  return t;
}

analysis::interval_figures between(const status_totals& a, const status_totals& b, int gpus,
                                   int preprocessors, int readers) {
  analysis::interval_figures f;
  f.seconds = std::chrono::duration<double>(b.at - a.at).count();
  f.trainer_wait_s = b.trainer_wait_s - a.trainer_wait_s;
  f.trainers = gpus;
  f.prep_busy_s = b.prep_busy_s - a.prep_busy_s;
  f.prep_workers = preprocessors;
  f.read_busy_s = b.read_busy_s - a.read_busy_s;
  f.readers = readers;
  f.window_full_s = b.window_full_s - a.window_full_s;
  return f;
}

}  // namespace conveyor
