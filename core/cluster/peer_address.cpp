#include "core/cluster/peer_address.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <strings.h>

#include <charconv>

namespace conveyor {

std::string peer_address::text() const {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool peer_address::loopback() const {
  if (strcasecmp(host.c_str(), "localhost") == 0) {
    return true;
  }
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24U) == 127U;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127U);
  }
  return false;
}

expected<peer_address> parse_peer_address(std::string_view text, port_zero zero) {
  auto bad = [&](const std::string& why) {
    return error{errc::invalid_argument,
                 "\"" + std::string(text) + "\" is not \"host:port\" (" + why + ")"};
  };
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return bad("no port");
  }
  auto host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 address goes in brackets: \"[::1]:7100\"");
  }
  if (host.empty()) {
    return bad("no host");
  }
  auto digits = text.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  const bool any = zero == port_zero::any_port;
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() ||
      (port == 0 && !any) || port > 65535) {
    return bad(any ? "the port must be a number in 0..65535 (0: one the system picks)"
                   : "the port must be a number in 1..65535");
  }
  return peer_address{std::string(host), static_cast<std::uint16_t>(port)};
}

}  // namespace conveyor
