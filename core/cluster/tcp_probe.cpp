#include "core/cluster/tcp_probe.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

namespace conveyor {
namespace {

using addresses = std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)>;

// Waits for a non-blocking connect on `fd`; 0 when it opened, else an errno value (ETIMEDOUT
// after the deadline).
int wait_connected(int fd, std::chrono::milliseconds deadline) {
  pollfd p{fd, POLLOUT, 0};
  int ready = 0;
  do {
    ready = ::poll(&p, 1, static_cast<int>(deadline.count()));
  } while (ready < 0 && errno == EINTR);
  if (ready == 0) {
    return ETIMEDOUT;
  }
  int err = 0;
  socklen_t len = sizeof err;
  if (ready < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
    return errno;
  }
  return err;
}

// One address: the open connection, or why not (an errno value).
std::pair<unique_fd, int> try_connect(const addrinfo& a, std::chrono::milliseconds deadline) {
  unique_fd fd(::socket(a.ai_family, a.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a.ai_protocol));
  if (!fd) {
    return {unique_fd{}, errno};
  }
  int err = ::connect(fd.get(), a.ai_addr, a.ai_addrlen) == 0 ? 0 : errno;
  if (err == EINPROGRESS) {
    err = wait_connected(fd.get(), deadline);
  }
  return {err == 0 ? std::move(fd) : unique_fd{}, err};
}

}  // namespace

expected<unique_fd> tcp_probe(const peer_address& to, std::chrono::milliseconds deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  auto port = std::to_string(to.port);
  if (int rc = ::getaddrinfo(to.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return error{errc::disconnected, to.text() + ": " + ::gai_strerror(rc)};
  }
  addresses list(found, &::freeaddrinfo);
  int last = ECONNREFUSED;
  for (const addrinfo* a = list.get(); a != nullptr; a = a->ai_next) {
    auto [fd, err] = try_connect(*a, deadline);
    if (err == 0) {
      return std::move(fd);
    }
    last = err;
  }
  return error{last == ETIMEDOUT ? errc::timed_out : errc::disconnected,
               to.text() + ": " + std::strerror(last)};
}

}  // namespace conveyor
