#pragma once
/// The monitor: logs one compact line per actor report (mailbox depth, items/s, latency
/// percentiles and role-specific figures), keeps the last one of each actor for /metrics, and
/// warns when an actor's mailbox has grown in several reports in a row — where the pipeline is
/// stuck shows in the log.

#include <caf/actor_system.hpp>

#include <memory>

#include "core/observe/live_reports.hpp"
#include "messages/monitor.hpp"

namespace conveyor {

struct monitor_options {
  int growth_warning_after = 3;  ///< reports in a row with a growing mailbox before warning
  /// Set: every report is kept there too, for /metrics (core/observe/metrics_endpoint.hpp).
  std::shared_ptr<live_reports> live;
};

monitor_actor spawn_monitor(caf::actor_system& sys, monitor_options options = {});

}  // namespace conveyor
