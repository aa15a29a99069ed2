#include "actors/monitor.hpp"

#include <caf/all.hpp>

#include <map>

#include "core/base/log.hpp"

namespace conveyor {
namespace {

struct mailbox_trend {
  bool seen = false;
  std::uint64_t last = 0;
  int growing = 0;  ///< reports in a row with a deeper mailbox than the one before
};

struct monitor_state {
  static inline const char* name = "monitor";
  std::map<std::string, mailbox_trend> trends;
  std::uint64_t reports = 0;
};

using monitor_pointer = monitor_actor::stateful_pointer<monitor_state>;

void on_report(monitor_pointer self, const monitor_options& opts, const actor_report& r) {
  if (opts.live) {
    opts.live->update(r);  // first: an actor in the log is on /metrics too
  }
  auto logger = log("monitor");
  logger->info(
      "{:<16} mailbox={:<5} items={:<8} rate={}/s p50={:.2f}ms p90={:.2f}ms p99={:.2f}ms {}",
      r.name, r.mailbox, r.items, r.items_per_s, r.p50_us / 1000.0, r.p90_us / 1000.0,
      r.p99_us / 1000.0, r.extra);
  ++self->state.reports;
  auto& trend = self->state.trends[r.name];
  // The first report of an actor only sets the baseline.
  trend.growing = trend.seen && r.mailbox > trend.last ? trend.growing + 1 : 0;
  trend.seen = true;
  trend.last = r.mailbox;
  if (trend.growing >= opts.growth_warning_after) {
    logger->warn("{}: mailbox has grown {} reports in a row (now {}): it cannot keep up", r.name,
                 trend.growing, r.mailbox);
  }
}

monitor_actor::behavior_type monitor(monitor_pointer self, monitor_options opts) {
  return {
      [self, opts](atoms::report, const actor_report& r) { on_report(self, opts, r); },
      [self](atoms::tick) { return self->state.reports; },
  };
}

}  // namespace

monitor_actor spawn_monitor(caf::actor_system& sys, monitor_options options) {
  return sys.spawn(monitor, options);
}

}  // namespace conveyor
