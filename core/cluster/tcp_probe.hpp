#pragma once
/// A bounded TCP connect: does anything listen at an address? CAF's middleman connects with a
/// blocking connect(2) inside its own actor, so a host that drops packets would hold it (and
/// the node's shutdown) for the kernel's SYN timeout, minutes; probing first, with a deadline,
/// hands it only addresses that answered.

#include <chrono>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"
#include "core/cluster/peer_address.hpp"

namespace conveyor {

/// The TCP connection to `to` when one opens within `deadline`; otherwise an error naming the
/// address: disconnected (refused, unreachable, no such host) or timed_out. Name resolution
/// uses the system resolver (its own timeouts apply). Thread-safe.
///
/// Keep the connection open at least until the real one (CAF's) is made: CAF 0.17 names a
/// connection by its socket's number and cleans up after a closed one later, through its
/// queue; a probe closed at once frees its number on the peer, the real connection that
/// follows gets the same number, and the late clean-up of the probe then removes the peer's
/// route to this node (the peer answers nothing more: a hello sent then waited for its whole
/// timeout, in CI). A probe that reached its peer is best held until the run ends
/// (core/cluster/held_probes.hpp).
expected<unique_fd> tcp_probe(const peer_address& to, std::chrono::milliseconds deadline);

}  // namespace conveyor
