#pragma once
/// What the live page draws, as one JSON document (/state.json): every actor's last report
/// (its role, mailbox, items, rate and recent latency percentiles), the samples delivered,
/// quarantined and in flight, each trainer's name and wait so far (the page turns two readings
/// into the stall between them: a served node's are its trainer processes, "job 0 rank 1",
/// else one per GPU, "trainer-0") and the live diagnosis's last line.

#include <string>
#include <vector>

#include "core/delivery/client_waits.hpp"
#include "core/delivery/pipeline_status.hpp"
#include "messages/monitor.hpp"

namespace conveyor {

/// The document for `status` (with `gpus` trainer channels), `reports` and a served node's
/// `clients` (null: not served), `seconds` after the node started. Thread-safe as what it
/// reads is.
std::string render_state_json(const pipeline_status& status, int gpus,
                              const std::vector<actor_report>& reports, const client_waits* clients,
                              double seconds);

}  // namespace conveyor
