#pragma once
/// The interface of a node's links actor (actors/peer_links.hpp), which connects the node to
/// its peers: local only, between the node's own actors.

#include <caf/actor_control_block.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>

#include "messages/atoms.hpp"
#include "messages/peer_cache.hpp"

namespace conveyor {

/// `connect(server)`: this node's own cache server, to introduce to the peers it dials (they
/// start then); `hello(identity, server)`: a peer of lower rank introduced itself to this
/// node's server, which delegates the hello here: the answer (this node's identity, or an
/// error when the hello is refused) goes to that peer; `leave(rank)`: that peer's run is over
/// (said to this node's server, delegated here: the sender is the peer's); `greeted(rank,
/// identity, server)` and `failed(rank, why)`: how a dialer's attempt at `rank` ended; `tick`:
/// try the peers not up; `peers_up`: the start's wait is over.
using peer_links_actor = caf::typed_actor<
    caf::reacts_to<atoms::connect, peer_cache_actor>,
    caf::replies_to<atoms::hello, peer_identity, caf::strong_actor_ptr>::with<peer_identity>,
    caf::replies_to<atoms::leave, std::uint64_t>::with<std::uint64_t>,
    caf::reacts_to<atoms::greeted, std::uint64_t, peer_identity, peer_cache_actor>,
    caf::reacts_to<atoms::failed, std::uint64_t, std::string>, caf::reacts_to<atoms::tick>,
    caf::reacts_to<atoms::peers_up>>;

}  // namespace conveyor
