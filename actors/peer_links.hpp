#pragma once
/// Connects a node to its peers (the other nodes of its cluster) and keeps watching them. One
/// connection per pair (messages/peer_cache.hpp): a node dials the peers of higher rank, each
/// probed first (a bounded TCP connect, core/cluster/tcp_probe.hpp), connected through CAF's
/// middleman (or its TLS manager), and greeted with this node's identity and cache server;
/// peers of lower rank dial it and are introduced by the node's own server (`hello`). Each
/// attempt runs in a dialer of its own (actors/peer_dialer.hpp), so that this actor stays free
/// to hear of peers going down while a peer is slow to answer. A peer of lower rank that goes
/// down with its connection is connected to once (no hello): CAF 0.17 can drop the route to a
/// peer whose connection is still up (actors/peer_dialer.hpp, dial_order::greet), and a
/// connection from this side makes it again. A peer that agrees on the run
/// and the cache plan is monitored and used; one that disagrees is refused for good, with an
/// error that names the setting. A peer that goes down is marked so at once (readers stop
/// asking it); one this node dials is tried again, first after 50 ms, then ever less often, up
/// to every `retry`.
///
/// Who says what is checked. With a `secret`, a hello, and the answer to one, must prove the
/// sender's rank (core/cluster/run_secret.hpp): a hello that does not is refused (the rank is
/// not refused for good: its real node may still come), and a dialed peer whose answer does
/// not is tried again later; only a peer that proves its rank and then disagrees on the run is
/// refused for good. Without one, ranks are taken on their word (logged once). A second hello
/// for a rank that is up is refused (the live connection is kept) unless it comes from that
/// rank's own node (answered again: its dialer did not hear the first answer), and
/// `leave(rank)` counts only when its sender is on that rank's node.
///
/// At start, `on_ready` is called once every peer is up or refused, or after `wait`, whichever
/// comes first: the pipeline starts reading then, so that the first epoch fills every node's
/// partition of the cache.

#include <caf/actor_system.hpp>
#include <caf/io/middleman_actor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "actors/peer_directory.hpp"
#include "core/cluster/run_secret.hpp"
#include "messages/peer_cache.hpp"
#include "messages/peer_links.hpp"

namespace conveyor {

struct peer_links_options {
  std::shared_ptr<peer_directory> peers;
  peer_identity identity;              ///< this node's; a peer must agree (identity_mismatch)
  caf::io::middleman_actor connector;  ///< the middleman's actor, or the TLS manager's
  std::chrono::milliseconds attempt_timeout{1000};  ///< each of probe, connect and hello
  std::chrono::milliseconds retry{2000};  ///< the longest between attempts at a peer not up
  std::chrono::milliseconds wait{60000};  ///< the longest start waits for peers
  std::function<void()> on_ready;         ///< called once (see above)
  run_secret secret{};                    ///< none: ranks are taken on their word
};

peer_links_actor spawn_peer_links(caf::actor_system& sys, peer_links_options options);

/// Why the node at `rank` of the cluster, which said `theirs`, cannot serve a node whose
/// identity is `mine` (naming the setting that differs); nullopt when it can.
std::optional<std::string> identity_mismatch(const peer_identity& mine, const peer_identity& theirs,
                                             std::uint64_t rank);

}  // namespace conveyor
