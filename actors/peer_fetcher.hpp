#pragma once
/// A reader's way to a peer's cache (the partitioned cache): sample `id`, held by another node
/// of the cluster by the cache plan, is fetched from that node over CAF's network layer before
/// the reader goes to storage. Blocking, for the readers' own threads (they are detached), and
/// bounded: a fetch that does not answer within the deadline falls back to storage and the
/// peer rests (is not asked) for cluster.peer_retry_ms, longer each time in a row; so does a
/// peer whose answers come near the deadline, or that gives a record that does not match this
/// node's own dataset (sample_source::check: the key of the id asked for, and the shard's own
/// checksum), which is not used. A peer that is down or refused is not asked at all; one whose
/// server or connection goes away while it is asked ends the wait at once, and one that answers
/// that its run is over is not asked again (as after its leave). Every outcome is counted in
/// `read_counts`; failures are logged.

#include <caf/actor_system.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "actors/peer_directory.hpp"
#include "core/metrics/read_counts.hpp"
#include "core/storage/cache_plan.hpp"
#include "core/storage/record.hpp"
#include "core/storage/sample_source.hpp"

namespace conveyor {

/// Thread-safe: every reader calls fetch() from its own thread.
class peer_fetcher {
 public:
  /// `source`: this node's dataset, which a fetched record must match.
  peer_fetcher(caf::actor_system& system, std::shared_ptr<peer_directory> peers,
               std::shared_ptr<const cache_plan> plan, std::shared_ptr<const sample_source> source,
               std::chrono::milliseconds deadline);

  /// Sample `id` of `epoch` from the peer whose cache holds it. nullopt when no other node
  /// holds it (nothing counted), or when the holder could not give it or gave a record that is
  /// not sample `id` (counted as a fallback: the caller reads storage).
  std::optional<record> fetch(std::uint64_t epoch, std::uint64_t id, read_counts& counts) const;

  const peer_directory& peers() const noexcept { return *peers_; }

 private:
  // Sample `id` from `holder` (peer `rank`); nullopt, logged, when it gave none or a wrong
  // one (the peer's health hears how long it took, and of timeouts and wrong records).
  std::optional<record> ask(const peer_cache_actor& holder, std::uint64_t rank, std::uint64_t epoch,
                            std::uint64_t id) const;
  // What peer `rank` answered for sample `id`: its record when it found it and it is that
  // sample; nothing when it refused (a peer whose run is over is marked as having left).
  std::optional<record> answered(peer_record& r, std::uint64_t rank, std::uint64_t id) const;
  // The record `r` of sample `id` that peer `rank` found, when it is that sample.
  std::optional<record> checked(peer_record& r, std::uint64_t rank, std::uint64_t id) const;

  caf::actor_system* system_;
  std::shared_ptr<peer_directory> peers_;
  std::shared_ptr<const cache_plan> plan_;
  std::shared_ptr<const sample_source> source_;
  std::chrono::milliseconds deadline_;
};

}  // namespace conveyor
