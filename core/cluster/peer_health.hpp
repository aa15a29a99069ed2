#pragma once
/// What a node knows of each of its peers (the other nodes of its cluster, whose caches serve
/// its misses): whether one may be asked for a sample now, and what went wrong with each, for
/// the run's report. A peer that is down, refused, not reached yet, or resting (its pace,
/// core/cluster/peer_pace.hpp: it let a fetch time out, gave a record that does not match the
/// dataset, or answers near the deadline) is not asked: its samples are read from storage.
///
/// The actors that connect to peers (actors/peer_links.cpp) and the readers that fetch from
/// them (actors/peer_fetcher.cpp) report here; plain code with the clock passed in.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster/peer_address.hpp"
#include "core/cluster/peer_pace.hpp"

namespace conveyor {

/// Thread-safe.
class peer_health {
 public:
  using clock = std::chrono::steady_clock;

  /// The cluster's nodes in rank order; `self` is this node (never a peer of its own).
  /// `backoff`: a peer's first rest; `deadline`: a fetch's (see peer_pace).
  /// Precondition: self < nodes.size(); backoff, deadline > 0.
  peer_health(std::vector<peer_address> nodes, std::uint64_t self,
              std::chrono::milliseconds backoff, std::chrono::milliseconds deadline);

  std::uint64_t world() const noexcept { return peers_.size(); }
  std::uint64_t self() const noexcept { return self_; }
  /// Precondition: rank < world().
  const peer_address& address(std::uint64_t rank) const { return peers_[rank].address; }
  /// "host:port (rank r)", for messages.
  std::string name(std::uint64_t rank) const;

  /// `rank` may be asked for a sample at `now`: it is up and not resting.
  bool usable(std::uint64_t rank, clock::time_point now) const;

  /// A connection to `rank` is up and it agreed on the cache plan.
  void connected(std::uint64_t rank);
  /// An attempt to connect to `rank` failed (it is retried later).
  void unreachable(std::uint64_t rank, std::string reason);
  /// The connection to `rank` went down (it is retried later).
  void lost(std::uint64_t rank, std::string reason);
  /// `rank` stopped normally (its run ended): not asked any more, tried again later, and not
  /// a failure.
  void left(std::uint64_t rank);
  /// `rank` disagrees on the cache plan: it is never asked.
  void refused(std::uint64_t rank, std::string reason);
  /// A fetch from `rank` ran past its deadline at `now`: it rests (first for `backoff`).
  void timed_out(std::uint64_t rank, clock::time_point now);
  /// `rank` answered a fetch after `took`, at `now`: it rests when its answers come near the
  /// deadline.
  void answered(std::uint64_t rank, clock::duration took, clock::time_point now);
  /// `rank` gave a record that does not match this node's dataset at `now`: it rests.
  void gave_wrong_record(std::uint64_t rank, clock::time_point now);

  /// Every peer was reached (it is up, or was up and went down or left) or refused: a node
  /// waiting for its peers at start can go.
  bool settled() const;
  /// Peers never reached yet (not refused): what start waits for.
  std::vector<std::uint64_t> unreached() const;
  /// Peers not up and not refused: those to connect (again).
  std::vector<std::uint64_t> unconnected() const;
  /// Every peer that failed during the run (went down other than by ending its run, was
  /// refused, was never reached, let fetches time out, gave records that do not match the
  /// dataset, rested for slow answers) as "host:port (rank r): what happened", in rank order.
  std::vector<std::string> failures() const;

 private:
  enum class state : std::uint8_t { connecting, up, down, left, refused };
  struct peer {
    peer(peer_address a, peer_pace p) : address(std::move(a)), pace(p) {}
    peer_address address;
    peer_pace pace;
    state now = state::connecting;
    std::string reason;  ///< the last thing that went wrong
    std::uint64_t timeouts = 0;
    std::uint64_t losses = 0;
    std::uint64_t wrong_records = 0;
  };

  bool peer_rank(std::uint64_t rank) const noexcept {
    return rank < peers_.size() && rank != self_;
  }
  std::string failure(const peer& p) const;
  // Calls `change(peer)` under the lock when `rank` is a peer's.
  template <class Change>
  void update(std::uint64_t rank, Change change);
  // The peers' ranks (never self) for which `holds(peer)`, in order.
  template <class Predicate>
  std::vector<std::uint64_t> ranks_where(Predicate holds) const;

  std::vector<peer> peers_;
  std::uint64_t self_ = 0;
  mutable std::mutex mutex_;
};

}  // namespace conveyor
