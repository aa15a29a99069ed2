#pragma once
/// A node's peers (the other nodes of its cluster, whose caches serve its misses): their
/// health (core/cluster/peer_health.hpp) and the handles of those connected. The links actor
/// (actors/peer_links.hpp) connects and watches them; readers take a handle to fetch from.

#include <caf/actor_addr.hpp>
#include <caf/actor_control_block.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <utility>
#include <vector>

#include "core/cluster/peer_health.hpp"
#include "messages/peer_cache.hpp"

namespace conveyor {

/// Thread-safe.
class peer_directory {
 public:
  /// The cluster's nodes in rank order, this node at `self`; see peer_health.
  peer_directory(std::vector<peer_address> nodes, std::uint64_t self,
                 std::chrono::milliseconds backoff, std::chrono::milliseconds deadline);

  peer_health& health() noexcept { return health_; }
  const peer_health& health() const noexcept { return health_; }

  /// The handle of peer `rank` when it may be asked now (health().usable); null otherwise.
  peer_cache_actor usable(std::uint64_t rank, peer_health::clock::time_point now) const;
  /// Peer `rank` is up at `handle` (marked connected).
  void connected(std::uint64_t rank, peer_cache_actor handle);
  /// A handle is on file for peer `rank`: it is up.
  bool up(std::uint64_t rank) const;
  /// `sender` runs on the node of the handle on file for peer `rank` (false when none is):
  /// a message from it speaks for that peer.
  bool speaks_for(std::uint64_t rank, const caf::strong_actor_ptr& sender) const;
  /// `sender` runs on the node of a peer that is up.
  bool from_a_peer(const caf::strong_actor_ptr& sender) const;
  /// The peer at `address` went down: its rank, its handle forgotten (the caller marks it lost
  /// or left in health()); nullopt for an address that is no peer's.
  std::optional<std::uint64_t> forget(const caf::actor_addr& address);
  /// Peer `rank` said its run is over: forgotten (marked left). False when it was not up.
  bool left(std::uint64_t rank);
  /// The peers connected now.
  std::vector<peer_cache_actor> connected_peers() const;
  /// Drops every handle (the pipeline stops).
  void clear();

 private:
  peer_health health_;
  mutable std::shared_mutex mutex_;
  std::vector<peer_cache_actor> handles_;  ///< per rank; null when not connected
};

}  // namespace conveyor
