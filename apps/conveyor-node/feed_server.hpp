#pragma once
/// The node as the data service of trainer processes: listens on serve.socket, attaches
/// clients as (job, rank), and moves each rank's batches from the pipeline to its clients
/// through the shared slots (served_feeds.hpp), with the bookkeeping of core/serving/feed_hub.
///
/// Threads: one puller per rank takes the rank's batches from the pipeline and publishes
/// them; the thread that calls run() accepts clients and reads their messages (attach,
/// release, ask_report, sign_state), and notices a client that has gone (its socket closes):
/// its unreleased batches wait for the next client of its (job, rank). run() returns once every
/// job has released every batch of every epoch, the pipeline failed, or `stop` was requested.
///
/// Every local process may be hostile, so no client can stall, starve or corrupt another:
/// - nothing the node sends ever blocks it: each session has a bounded outbox
///   (session_outbox.hpp); a client that does not read is dropped, with a log line;
/// - every descriptor a client sends is closed unless its message takes one (fd_passing.hpp);
///   a node out of descriptors logs it and backs off accepting instead of spinning;
/// - at most serve.max_sessions sessions (a full house makes room by closing the oldest one
///   that has not attached), and a session that does not attach within serve.attach_timeout_s
///   is closed; reports and signatures need an attach;
/// - resume states are checked against the node's run when they arrive, before any work
///   proportional to what they claim (resume_gate.hpp), and a bad one refuses its own client
///   alone; one waiting session per (job, rank); with a state key, only signed states resume.
///
/// With serve.resume the pipeline starts only once a client of every rank of every job has
/// attached: from the union of each job's ranks' states (every job must stand at the same
/// point), and only then are they welcomed. A client that attaches later with a state goes on from
/// where the node is; one that attaches with a state to a node started without serve.resume is
/// refused (it would see again what it had).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/conveyor-node/resume_gate.hpp"
#include "apps/conveyor-node/served_feeds.hpp"
#include "apps/conveyor-node/stop_token.hpp"
#include "config/topology.hpp"
#include "conveyor/pipeline.hpp"
#include "core/delivery/client_waits.hpp"
#include "core/serving/state_key.hpp"

namespace conveyor {

/// What a serving run did, for the node's JSON line.
struct serve_outcome {
  std::vector<std::uint64_t> released_per_job;  ///< samples each job released
  std::uint64_t attaches = 0;                   ///< clients that attached
  std::uint64_t lost_clients = 0;               ///< clients gone with batches unreleased
  std::uint64_t refused = 0;                    ///< sessions refused or dropped for misuse
  std::uint64_t slow_clients = 0;               ///< clients dropped for not reading
  bool complete = false;               ///< every job released every batch the pipeline delivered
  std::optional<error> start_failure;  ///< the pipeline could not start (serve.resume)
};

/// Opens the node's pipeline on feeds.feed_memory(), from `resume` (null: from the start).
using pipeline_opener = std::function<expected<pipeline>(const run_state* resume)>;

/// What the server serves: the run it names to clients and checks their states against, and
/// the key it signs them with (null: states are neither signed nor required to be).
struct serve_setup {
  serve_config config;
  run_identity run;
  const state_key* key = nullptr;
  /// Where each client's wait goes (its pipeline's /metrics reads it); null: nowhere.
  std::shared_ptr<client_waits> waits;
};

/// Serves `p` on `listener` (a listening, non-blocking socket the caller keeps) until done;
/// see above. `p` is open already, or, with config.resume, empty: `open` opens it then.
serve_outcome serve_clients(const serve_setup& setup, std::optional<pipeline>& p,
                            const pipeline_opener& open, const served_feeds& feeds, int listener,
                            stop_token& stop);

}  // namespace conveyor
