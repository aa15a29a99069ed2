#include "core/serving/fd_passing.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace conveyor {
namespace {

bool peer_gone(int err) {
  return err == EPIPE || err == ECONNRESET || err == ENOTCONN;
}

error socket_error(const char* call, int err) {
  return {peer_gone(err) ? errc::disconnected : errc::io_error,
          std::string(call) + " on a serving socket: " +
              (peer_gone(err) ? "the peer has gone" : std::strerror(err))};
}

// Control data with room for exactly one descriptor, aligned for cmsghdr.
struct one_fd_control {
  alignas(cmsghdr) char bytes[CMSG_SPACE(sizeof(int))];
};

// Waits until `socket` is readable or `timeout` passes; EINTR restarts the wait.
expected<void> wait_readable(int socket, std::chrono::milliseconds timeout) {
  pollfd p{socket, POLLIN, 0};
  int n = 0;
  do {
    n = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    return socket_error("poll", errno);
  }
  if (n == 0) {
    return error{errc::timed_out, "no message on a serving socket within " +
                                      std::to_string(timeout.count()) + " ms"};
  }
  return {};
}

}  // namespace

expected<void> send_message(int socket, const void* bytes, std::size_t size, int fd) {
  iovec io{const_cast<void*>(bytes), size};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  one_fd_control control{};
  if (fd >= 0) {
    m.msg_control = control.bytes;
    m.msg_controllen = sizeof(control.bytes);
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  ssize_t sent = 0;
  do {
    sent = ::sendmsg(socket, &m, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    return socket_error("sendmsg", errno);
  }
  return {};
}

expected<received_message> receive_message(int socket, std::size_t max_size,
                                           std::chrono::milliseconds timeout) {
  if (auto ready = wait_readable(socket, timeout); !ready) {
    return std::move(ready).error();
  }
  received_message out;
  out.bytes.resize(max_size);
  iovec io{out.bytes.data(), max_size};
  one_fd_control control{};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = control.bytes;
  m.msg_controllen = sizeof(control.bytes);
  ssize_t got = 0;
  do {
    got = ::recvmsg(socket, &m, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    return socket_error("recvmsg", errno);
  }
  if (got == 0) {
    return error{errc::disconnected, "recvmsg on a serving socket: the peer has gone"};
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
      out.fd.reset(fd);
    }
  }
  if ((m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
    return error{errc::io_error,
                 "a message on a serving socket was cut short (" +
                     std::string((m.msg_flags & MSG_CTRUNC) != 0
                                     ? "its descriptors did not fit"
                                     : "longer than " + std::to_string(max_size) + " bytes") +
                     ")"};
  }
  out.bytes.resize(static_cast<std::size_t>(got));
  return out;
}

}  // namespace conveyor
