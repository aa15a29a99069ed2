#pragma once
/// What a node's /metrics says: Prometheus' text exposition format (0.0.4), made with
/// prometheus-cpp's serializer, of a running pipeline: every actor's last report (labelled
/// `actor="preprocessor-3"`), the pipeline's status (samples delivered, quarantined, filtered,
/// retried, handed off; the window, the latency budget; each trainer's wait, each class of the
/// live diagnosis, the reads by source), an object store's requests, retries, failures and
/// bytes, and this process's memory and CPU. Names and units as
/// Prometheus' conventions want: `conveyor_` first, base units (seconds, bytes), counters end
/// in `_total`.

#include <string>
#include <vector>

#include "core/delivery/pipeline_status.hpp"
#include "core/remote/transfer_counters.hpp"
#include "messages/monitor.hpp"

namespace conveyor {

/// The exposition of `status` (with `gpus` trainer channels), `reports` and, for a dataset in
/// an object store, its traffic `s3` (null: none). Thread-safe as pipeline_status and
/// transfer_counters are; its cost grows with the actors, never with anything a client sends.
std::string render_metrics(const pipeline_status& status, int gpus,
                           const std::vector<actor_report>& reports,
                           const transfer_counters* s3 = nullptr);

}  // namespace conveyor
