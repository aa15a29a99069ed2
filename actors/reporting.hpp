#pragma once
/// The periodic report every actor sends to the monitor: arm a tick, and on each tick send
/// the actor's figures and arm the next one.

#include <chrono>
#include <cstdint>
#include <string>

#include "actors/actor_metrics.hpp"
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

/// Sends the report of `metrics` (with `extra` figures) to the monitor and arms the next tick.
/// Call from the actor's tick handler.
template <class Self>
void report_and_rearm(Self* self, const reporting& r, actor_metrics& metrics,
                      std::string extra = {}) {
  if (!r.monitor) {
    return;
  }
  self->send(r.monitor, atoms::report::value,
             metrics.report(mailbox_depth(self), std::move(extra)));
  self->delayed_send(self, r.every, atoms::tick::value);
}

}  // namespace conveyor
