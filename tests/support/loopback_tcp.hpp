#pragma once
/// TCP sockets on the loopback interface, as the tests of the node's TCP endpoints (peers,
/// /metrics) open them: a connection, a listener that takes a port away from the node, and
/// free ports. Every call is bounded by the kernel's own answer (loopback: at once).

#include <cstdint>
#include <utility>
#include <vector>

#include "core/base/unique_fd.hpp"

namespace conveyor::testing {

/// A TCP connection to `host` (dotted IPv4, "127.0.0.1" by default):`port`; an invalid fd when
/// refused.
unique_fd tcp_connect(std::uint16_t port, const char* host = "127.0.0.1");
/// A socket listening on 127.0.0.1:`port` (0: a port the system picks, the one way to hold a
/// port no other test can take first), and its port; an invalid fd and port 0 when it cannot
/// listen there (another socket listens on it).
std::pair<unique_fd, std::uint16_t> tcp_listen(std::uint16_t port = 0);
/// `count` distinct ports of 127.0.0.1 no socket was bound to a moment ago, below Linux's
/// ephemeral range (32768-60999), so that no outgoing connection takes one before the node
/// listens on it.
std::vector<std::uint16_t> free_tcp_ports(int count);

}  // namespace conveyor::testing
