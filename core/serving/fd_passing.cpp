#include "core/serving/fd_passing.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace conveyor {
namespace {

bool peer_gone(int err) {
  return err == EPIPE || err == ECONNRESET || err == ENOTCONN;
}

error socket_error(const char* call, int err) {
  if (err == EAGAIN || err == EWOULDBLOCK) {
    return {
        errc::resource_exhausted,
        std::string(call) + " on a serving socket: the peer is not reading (its buffer is full)"};
  }
  return {peer_gone(err) ? errc::disconnected : errc::io_error,
          std::string(call) + " on a serving socket: " +
              (peer_gone(err) ? "the peer has gone" : std::strerror(err))};
}

// Control data for one descriptor out, aligned for cmsghdr.
struct send_control {
  alignas(cmsghdr) char bytes[CMSG_SPACE(sizeof(int))];
};

// Control data with room for max_received_descriptors descriptors in (and a second header, in
// case a peer splits them over two control messages).
struct receive_control {
  alignas(cmsghdr) char bytes[CMSG_SPACE(sizeof(int) * max_received_descriptors) +
                              CMSG_SPACE(sizeof(int))];
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

// Takes ownership of every descriptor in every SCM_RIGHTS control message of `m`.
void take_descriptors(msghdr& m, std::vector<unique_fd>& into) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0)) {
      continue;
    }
    const auto count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      into.emplace_back(fd);
    }
  }
}

// The length of the next message on the SOCK_SEQPACKET `socket`, capped at `max_size` (a longer
// one is then read to that length and refused as cut short); 0 at the end of the stream, or
// where no message is there after all (the receive that follows says which). A socket error is
// returned as it is: the peek has taken it (Linux reports a reset once, before the messages the
// peer sent), so a receive into a buffer of 0 bytes would take the next message with it, lost.
expected<std::size_t> next_message_size(int socket, std::size_t max_size) {
  ssize_t size = 0;
  do {
    size = ::recv(socket, nullptr, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
  } while (size < 0 && errno == EINTR);
  if (size < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
    return socket_error("recv", errno);
  }
  return size > 0 ? std::min(static_cast<std::size_t>(size), max_size) : 0;
}

}  // namespace

expected<void> send_message(int socket, const void* bytes, std::size_t size, int fd, bool wait) {
  iovec io{const_cast<void*>(bytes), size};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  send_control control{};
  if (fd >= 0) {
    m.msg_control = control.bytes;
    m.msg_controllen = sizeof(control.bytes);
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  const int flags = MSG_NOSIGNAL | (wait ? 0 : MSG_DONTWAIT);
  ssize_t sent = 0;
  do {
    sent = ::sendmsg(socket, &m, flags);
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
  auto size = next_message_size(socket, max_size);
  if (!size) {
    return std::move(size).error();
  }
  received_message out;
  // As long as the message is, not max_size: a buffer of max_size (1 MiB for a worker's reply)
  // zero-filled for every message of a few hundred bytes cost its time and kept a MiB dirty.
  out.bytes.resize(*size);
  iovec io{out.bytes.data(), out.bytes.size()};
  receive_control control{};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = control.bytes;
  m.msg_controllen = sizeof(control.bytes);
  ssize_t got = 0;
  do {
    got = ::recvmsg(socket, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return error{errc::timed_out, "no message on a serving socket after all"};
    }
    return socket_error("recvmsg", errno);
  }
  take_descriptors(m, out.fds);  // owned from here on, whatever else is wrong
  if (got == 0) {
    return error{errc::disconnected, "recvmsg on a serving socket: the peer has gone"};
  }
  if ((m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
    return error{errc::invalid_argument,
                 "a message on a serving socket was cut short (" +
                     std::string((m.msg_flags & MSG_CTRUNC) != 0
                                     ? "more than " + std::to_string(max_received_descriptors) +
                                           " descriptors came with it"
                                     : "longer than " + std::to_string(max_size) + " bytes") +
                     ")"};
  }
  out.bytes.resize(static_cast<std::size_t>(got));
  return out;
}

}  // namespace conveyor
