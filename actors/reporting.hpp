#pragma once
/// The periodic report every actor sends to the monitor: arm a tick, and on each tick send
/// the actor's figures and arm the next one.

#include <chrono>

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

/// Sends the report of `metrics` (with `extra` figures) to the monitor and arms the next tick.
/// Call from the actor's tick handler.
template <class Self>
void report_and_rearm(Self* self, const reporting& r, actor_metrics& metrics,
                      std::string extra = {}) {
  if (!r.monitor) {
    return;
  }
  self->send(r.monitor, atoms::report::value,
             metrics.report(self->mailbox().size(), std::move(extra)));
  self->delayed_send(self, r.every, atoms::tick::value);
}

}  // namespace conveyor
