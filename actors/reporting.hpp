#pragma once
/// The periodic report every actor sends to the monitor: arm a tick, and on each tick send
/// the actor's figures and arm the next one.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/actor_metrics.hpp"
#include "core/transforms/external_step.hpp"
#include "messages/monitor.hpp"

namespace conveyor {

struct reporting {
  monitor_actor monitor;  ///< may be null: then nothing is reported
  std::chrono::milliseconds every{1000};
};

/// Arms the first tick. Call once when the actor starts.
template <class Self>
void start_reporting(Self* self, const reporting& r) {
  if (r.monitor) {
    self->delayed_send(self, r.every, atoms::tick::value);
  }
}

/// The messages waiting in `self`'s mailbox as of the start of its current round: CAF 0.17
/// moves what has arrived into the actor's queue as each round (a few messages) starts, so
/// those that came in during the round count from the next one on. Call from `self`'s handlers.
template <class Self>
std::uint64_t mailbox_depth(Self* self) {
  // Not mailbox().size(): it fetches the arrivals itself, and CAF 0.17's fetch, compiled in
  // our code, static_casts an empty queue's dummy head to a mailbox_element, which UBSan's
  // vptr check rejects (task_queue.hpp:67; harmless, the same code runs uninstrumented in
  // libcaf_core for every message).
  return self->mailbox().queue().total_task_size();
}

/// Sends the report of `metrics` (with `extra` figures, and `gauges`: some of them as numbers)
/// to the monitor and arms the next tick.
/// Call from the actor's tick handler.
template <class Self>
void report_and_rearm(Self* self, const reporting& r, actor_metrics& metrics,
                      std::string extra = {}, std::vector<role_gauge> gauges = {}) {
  if (!r.monitor) {
    return;
  }
  auto report = metrics.report(mailbox_depth(self), std::move(extra));
  report.gauges = std::move(gauges);
  self->send(r.monitor, atoms::report::value, std::move(report));
  self->delayed_send(self, r.every, atoms::tick::value);
}

/// Sends the monitor a report per process of `processes` (an external step's workers: each is
/// shown as an actor is, its sample in flight as its mailbox). Call from the tick handler of
/// the one actor that speaks for them.
template <class Self>
void report_processes(Self* self, const reporting& r,
                      const std::vector<external_process_figures>& processes) {
  if (!r.monitor) {
    return;
  }
  for (const auto& p : processes) {
    actor_report out;
    out.name = p.name;
    out.mailbox = p.in_flight ? 1 : 0;
    out.items = p.items;
    out.items_per_s = p.items_per_s;
    out.p50_us = p.p50_us;
    out.p90_us = p.p90_us;
    out.p99_us = p.p99_us;
    out.extra = "pid=" + (p.pid < 0 ? std::string("none") : std::to_string(p.pid)) +
                " in_flight=" + (p.in_flight ? "1" : "0");
    out.gauges = {{"samples_in_flight", p.in_flight ? 1 : 0}};
    self->send(r.monitor, atoms::report::value, std::move(out));
  }
}

}  // namespace conveyor
