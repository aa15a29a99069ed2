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

/// Whether an address may say port 0: "any port the system picks" (a listener whose port is
/// read back once it listens), or not (an address another node connects to).
enum class port_zero : bool { refused, any_port };

/// errc::invalid_argument saying what is wrong with `text` (no port, a port outside 1..65535
/// (0..65535 with port_zero::any_port), an empty host).
expected<peer_address> parse_peer_address(std::string_view text,
                                          port_zero zero = port_zero::refused);

}  // namespace conveyor
