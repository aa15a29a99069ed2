#pragma once
/// A node's cache as its peers see it (the partitioned cache): published on the node's
/// address in cluster.peers, it delegates `hello` and `leave` to the node's links actor (which
/// checks who says them and answers) and answers `fetch(epoch, id)` with sample `id` from the
/// node's cache, to a node it admitted as a peer only. A sample the node holds but has not cached
/// yet is read from storage, cached and given: the cluster reads each held sample from storage
/// once. A front actor hands fetches to `workers` detached actors, so storage reads for peers run
/// beside each other and never on the scheduler's threads; the front alone answers the peers,
/// every fetch, before the asker's deadline (messages/peer_cache.hpp).

#include <caf/actor_system.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "actors/peer_directory.hpp"
#include "core/delivery/pipeline_status.hpp"
#include "core/storage/minio_cache.hpp"
#include "core/storage/sample_source.hpp"
#include "messages/peer_cache.hpp"
#include "messages/peer_links.hpp"

namespace conveyor {

struct peer_server_options {
  std::shared_ptr<const sample_source> source;
  std::shared_ptr<minio_cache> cache;
  std::shared_ptr<pipeline_status> status;  ///< counts reads for peers and samples served
  std::uint64_t epochs = 1;                 ///< the run's: a fetch for a later one is refused
  int workers = 1;                          ///< >= 1
  peer_links_actor links;                   ///< answers hello and leave
  /// The peers this node admitted: a fetch from any other node is refused (not_a_peer).
  std::shared_ptr<const peer_directory> peers;
  /// The askers' fetch deadline (cluster.peer_timeout_ms). A fetch a worker has not answered
  /// within half of it is answered as failed, while the asker still waits; a worker waits for
  /// another's read of the same sample a quarter of it at most.
  std::chrono::milliseconds deadline{1000};
  /// Set once this node's run is over (before it says leave): every fetch is answered `ended`
  /// from then on. Null: never.
  std::shared_ptr<const std::atomic<bool>> ended;
};

/// What this node answers to a fetch of sample `id` for `epoch`. Plain: callable from any
/// thread (the server's workers call it).
peer_record serve_fetch(const peer_server_options& options, std::uint64_t epoch, std::uint64_t id);

/// The front actor, its workers linked to it: an exit of the front stops them.
peer_cache_actor spawn_peer_server(caf::actor_system& sys, peer_server_options options);

}  // namespace conveyor
