#include "support/loopback_tcp.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <random>

namespace conveyor::testing {
namespace {

sockaddr_in address(const char* host, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
    a.sin_addr.s_addr = htonl(INADDR_NONE);
  }
  return a;
}

// `fd` bound to 127.0.0.1:`port`.
bool bind_loopback(const unique_fd& fd, std::uint16_t port) {
  const auto a = address("127.0.0.1", port);
  return ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
}

}  // namespace

unique_fd tcp_connect(std::uint16_t port, const char* host) {
  unique_fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const auto a = address(host, port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    return unique_fd();
  }
  return fd;
}

std::pair<unique_fd, std::uint16_t> tcp_listen(std::uint16_t port) {
  unique_fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int on = 1;  // as servers do (and free_tcp_ports asks): a port left in TIME_WAIT is free
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (!bind_loopback(fd, port) || ::listen(fd.get(), 4) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return {unique_fd(), 0};
  }
  return {std::move(fd), ntohs(a.sin_port)};
}

std::vector<std::uint16_t> free_tcp_ports(int count) {
  std::random_device rd;
  std::vector<std::uint16_t> out;
  while (static_cast<int>(out.size()) < count) {
    auto port = static_cast<std::uint16_t>(20000 + rd() % 12000);
    unique_fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int on = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (bind_loopback(fd, port) && std::find(out.begin(), out.end(), port) == out.end()) {
      out.push_back(port);
    }
  }
  return out;
}

}  // namespace conveyor::testing
