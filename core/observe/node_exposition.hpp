#pragma once
/// What a node's /metrics says: Prometheus' text exposition format (0.0.4), made with
/// prometheus-cpp's serializer, of a running pipeline: every actor's last report (labelled
/// `actor="preprocessor-3"`), the pipeline's status (samples delivered, quarantined, filtered,
/// retried, handed off; the window, the latency budget; each trainer's wait, each class of the
/// live diagnosis, each pool's busy share, the reads by source), an object store's requests,
/// retries, failures and bytes, a served node's trainer processes' waits, and this process's
/// memory and CPU. Names and units as
/// Prometheus' conventions want: `conveyor_` first, base units (seconds, bytes), counters end
/// in `_total`.

#include <string>
#include <vector>

#include "core/delivery/client_waits.hpp"
#include "core/delivery/pipeline_status.hpp"
#include "core/remote/transfer_counters.hpp"
#include "messages/monitor.hpp"

namespace conveyor {

/// What only some nodes have (null: this one has not).
struct exposition_extras {
  const transfer_counters* s3 = nullptr;  ///< a dataset in an object store: its traffic
  const client_waits* clients = nullptr;  ///< a served node: its trainer processes' waits
};

/// The exposition of `status` (with `gpus` trainer channels), `reports` and `extras`.
/// Thread-safe as what it reads is; its cost grows with the actors and the served trainers,
/// never with anything a client sends.
std::string render_metrics(const pipeline_status& status, int gpus,
                           const std::vector<actor_report>& reports,
                           const exposition_extras& extras = {});

}  // namespace conveyor
