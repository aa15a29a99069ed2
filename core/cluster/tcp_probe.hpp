#pragma once
/// A bounded TCP connect: does anything listen at an address? CAF's middleman connects with a
/// blocking connect(2) inside its own actor, so a host that drops packets would hold it (and
/// the node's shutdown) for the kernel's SYN timeout, minutes; probing first, with a deadline,
/// hands it only addresses that answered.

#include <chrono>

#include "conveyor/error.hpp"
#include "core/cluster/peer_address.hpp"

namespace conveyor {

/// Success when a TCP connection to `to` opens within `deadline` (it is closed at once);
/// otherwise an error naming the address: disconnected (refused, unreachable, no such host) or
/// timed_out. Name resolution uses the system resolver (its own timeouts apply). Thread-safe.
expected<void> tcp_probe(const peer_address& to, std::chrono::milliseconds deadline);

}  // namespace conveyor
