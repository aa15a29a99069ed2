#pragma once
/// What the live page draws, as one JSON document (/state.json): every actor's last report
/// (its role, mailbox, items, rate and recent latency percentiles), the samples delivered,
/// quarantined and in flight, each trainer's wait so far (the page turns two readings into the
/// stall between them) and the live diagnosis's last line.

#include <string>
#include <vector>

#include "core/delivery/pipeline_status.hpp"
#include "messages/monitor.hpp"

namespace conveyor {

/// The document for `status` (with `gpus` trainer channels) and `reports`, `seconds` after the
/// node started. Thread-safe as pipeline_status is.
std::string render_state_json(const pipeline_status& status, int gpus,
                              const std::vector<actor_report>& reports, double seconds);

}  // namespace conveyor
