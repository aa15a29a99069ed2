#pragma once
/// conveyor-node with serve.socket set: the node serves trainer processes (feed_server.hpp)
/// instead of running its simulated trainer, and prints one JSON line when it ends.

#include <string>

#include "apps/conveyor-node/feed_server.hpp"
#include "apps/conveyor-node/stop_token.hpp"
#include "config/topology.hpp"
#include "conveyor/pipeline.hpp"

namespace conveyor {

/// With serve.linger it goes on answering clients after that until it is stopped (a signal, its
/// owner's end). Exit code: 0 once every job released every epoch with nothing lost or
/// duplicated (a lingering node stopped after that too: main gives a signal's own code); 1 a run
/// that failed, or was stopped (main turns that into 128 + the signal); 2 a topology that
/// cannot serve (no fixed output size, a socket path that cannot be bound).
int run_serving(const topology& t, stop_token& stop);

/// The serving JSON line: mode "serve", jobs, ranks, epochs, dataset_size, samples_per_job
/// (released by each job), samples_per_s (all jobs), attaches, lost_clients (clients that went
/// away holding batches; those batches were handed to the next client), refused_clients
/// (connections refused or dropped for misuse), slow_clients (dropped for not reading), the
/// node's ledger
/// (delivered, lost, duplicates, quarantined), steps_executed, peak_rss_mb, wall_s, complete,
/// interrupted.
std::string serve_json(const pipeline_info& info, const serve_outcome& outcome,
                       const pipeline_report& report, double wall_s, bool interrupted);

}  // namespace conveyor
