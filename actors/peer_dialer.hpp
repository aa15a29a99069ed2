#pragma once
/// One attempt to reach a peer the node dials: probe its address (a bounded TCP connect,
/// core/cluster/tcp_probe.hpp; held open, in `probes` once the peer answered), connect through
/// CAF's middleman (or its TLS manager), and greet it with this node's identity and cache
/// server; then tell the links actor how it went (`greeted` with the peer's identity and
/// server, or `failed` with why) and end. A blocking
/// actor of its own, bounded by `timeout` at each of the three steps: the links actor never
/// waits on a slow peer, and (unlike a detached event-based actor, which CAF 0.17 sometimes kept
/// from being destroyed after it had talked to another node, holding the node's shutdown
/// forever) it ends when its function returns.

#include <caf/actor_system.hpp>
#include <caf/io/middleman_actor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>

#include "core/cluster/held_probes.hpp"
#include "core/cluster/peer_address.hpp"
#include "messages/peer_cache.hpp"
#include "messages/peer_links.hpp"

namespace conveyor {

struct dial_order {
  std::uint64_t rank = 0;
  peer_address address;
  caf::io::middleman_actor connector;  ///< the middleman's actor, or the TLS manager's
  peer_identity identity;              ///< this node's, sent in hello
  peer_cache_actor server;             ///< this node's, introduced in hello
  peer_links_actor links;              ///< told how it went
  std::chrono::milliseconds timeout{1000};
  std::shared_ptr<held_probes> probes;  ///< where a probe of a peer that answered is held
  /// False: connect only, greet nobody, tell the links actor nothing. For a peer of lower rank
  /// that went down while it may be up: a connection closed near the moment its connection
  /// was accepted here can make CAF 0.17 drop the route to it (core/cluster/held_probes.hpp;
  /// a local port scanner does it), and the peer, still sending fine, cannot tell. A
  /// connection from this node makes the route again; the peer's next hello is then answered.
  bool greet = true;
};

void spawn_peer_dialer(caf::actor_system& sys, dial_order order);

}  // namespace conveyor
