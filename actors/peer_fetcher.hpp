#pragma once
/// A reader's way to a peer's cache (the partitioned cache): sample `id`, held by another node
/// of the cluster by the cache plan, is fetched from that node over CAF's network layer before
/// the reader goes to storage. Blocking, for the readers' own threads (they are detached), and
/// bounded: a fetch that does not answer within the deadline falls back to storage and the
/// peer is not asked again for cluster.peer_retry_ms; a peer that is down or refused is not
/// asked at all. Every outcome is counted in `read_counts`; failures are logged.

#include <caf/actor_system.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "actors/peer_directory.hpp"
#include "core/metrics/read_counts.hpp"
#include "core/storage/cache_plan.hpp"
#include "core/storage/record.hpp"

namespace conveyor {

/// Thread-safe: every reader calls fetch() from its own thread.
class peer_fetcher {
 public:
  peer_fetcher(caf::actor_system& system, std::shared_ptr<peer_directory> peers,
               std::shared_ptr<const cache_plan> plan, std::chrono::milliseconds deadline);

  /// Sample `id` of `epoch` from the peer whose cache holds it. nullopt when no other node
  /// holds it (nothing counted), or when the holder could not give it (counted as a fallback:
  /// the caller reads storage).
  std::optional<record> fetch(std::uint64_t epoch, std::uint64_t id, read_counts& counts) const;

  const peer_directory& peers() const noexcept { return *peers_; }

 private:
  // Sample `id` from `holder` (peer `rank`); nullopt, logged, when it gave none (a timeout
  // also puts the peer in its backoff).
  std::optional<record> ask(const peer_cache_actor& holder, std::uint64_t rank, std::uint64_t epoch,
                            std::uint64_t id) const;

  caf::actor_system* system_;
  std::shared_ptr<peer_directory> peers_;
  std::shared_ptr<const cache_plan> plan_;
  std::chrono::milliseconds deadline_;
};

}  // namespace conveyor
