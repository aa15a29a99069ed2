#pragma once
/// Where a node of the cluster listens for its peers: "host:port" (a name, an IPv4 address, or
/// an IPv6 address in brackets: "[::1]:7100").

#include <cstdint>
#include <string>
#include <string_view>

#include "conveyor/error.hpp"

namespace conveyor {

struct peer_address {
  std::string host;
  std::uint16_t port = 0;

  /// "host:port", as it was written.
  std::string text() const;
  /// The host is this machine's loopback interface: "localhost", 127.0.0.0/8 or ::1 (also
  /// IPv4-mapped). Any other name counts as beyond the machine: it is not resolved here.
  bool loopback() const;
  bool operator==(const peer_address& o) const noexcept { return host == o.host && port == o.port; }
};

/// errc::invalid_argument saying what is wrong with `text` (no port, a port outside 1..65535,
/// an empty host).
expected<peer_address> parse_peer_address(std::string_view text);

}  // namespace conveyor
