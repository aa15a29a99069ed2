#include "actors/actor_metrics.hpp"

namespace conveyor {

void actor_metrics::record(std::int64_t ns) {
  latency_.record(ns);
  histogram_.record(ns);
  rate_.add(std::chrono::steady_clock::now(), 1);
}

actor_report actor_metrics::report(std::uint64_t mailbox, std::string extra) {
  auto snap = latency_.snapshot();
  actor_report r;
  r.name = name_;
  r.mailbox = mailbox;
  r.items = rate_.total();
  r.items_per_s = static_cast<std::uint64_t>(rate_.rate(std::chrono::steady_clock::now()));
  r.p50_us = snap.p50 / 1000;
  r.p90_us = snap.p90 / 1000;
  r.p99_us = snap.p99 / 1000;
  r.extra = std::move(extra);
  r.latency_counts.assign(histogram_.counts().begin(), histogram_.counts().end());
  r.latency_sum_ns = histogram_.sum_ns();
  return r;
}

}  // namespace conveyor
