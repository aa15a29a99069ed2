#pragma once
/// The node as the data service of trainer processes: listens on serve.socket, attaches
/// clients as (job, rank), and moves each rank's batches from the pipeline to its clients
/// through the shared slots (served_feeds.hpp), with the bookkeeping of core/serving/feed_hub.
///
/// Threads: one puller per rank takes the rank's batches from the pipeline and publishes
/// them; the thread that calls run() accepts clients and reads their messages (attach,
/// release, ask_report), and notices a client that has gone (its socket closes): its
/// unreleased batches wait for the next client of its (job, rank). run() returns once every
/// job has released every batch of every epoch, the pipeline failed, or `stop` was requested.
///
/// With serve.resume the pipeline starts only once a client of every rank has attached: from
/// the union of the resume states they attached with (merge_states), and only then are they
/// welcomed. A client that attaches later with a state goes on from where the node is; one that
/// attaches with a state to a node started without serve.resume is refused (it would see again
/// what it had).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "apps/conveyor-node/served_feeds.hpp"
#include "apps/conveyor-node/stop_token.hpp"
#include "config/topology.hpp"
#include "conveyor/pipeline.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {

/// What a serving run did, for the node's JSON line.
struct serve_outcome {
  std::vector<std::uint64_t> released_per_job;  ///< samples each job released
  std::uint64_t attaches = 0;                   ///< clients that attached
  std::uint64_t lost_clients = 0;               ///< clients gone with batches unreleased
  bool complete = false;                        ///< every job released every epoch
  std::optional<error> start_failure;           ///< the pipeline could not start (serve.resume)
};

/// Opens the node's pipeline on feeds.feed_memory(), from `resume` (null: from the start).
using pipeline_opener = std::function<expected<pipeline>(const run_state* resume)>;

/// Serves `p` on `listener` until done; see above. `p` is open already, or, with
/// config.resume, empty: `open` opens it then. `epochs`: trainer.epochs.
serve_outcome serve_clients(const serve_config& config, std::optional<pipeline>& p,
                            const pipeline_opener& open, std::uint64_t epochs,
                            const served_feeds& feeds, unique_fd listener, stop_token& stop);

}  // namespace conveyor
