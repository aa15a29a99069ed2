#include "core/serving/unix_socket.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace conveyor {
namespace {

error call_failed(const std::string& path, const char* call, int err) {
  return {errc::io_error, path + ": " + call + ": " + std::strerror(err)};
}

// The address of `path`, or the error that says it is too long.
expected<sockaddr_un> address_of(const std::string& path, errc too_long) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path) {
    return error{too_long, "socket path \"" + path + "\" is " + std::to_string(path.size()) +
                               " bytes; a Unix socket path holds 1 to " +
                               std::to_string(sizeof a.sun_path - 1)};
  }
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

expected<unique_fd> new_socket(const std::string& path) {
  unique_fd s(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!s) {
    return call_failed(path, "socket", errno);
  }
  return s;
}

// Removes a socket file a dead node left behind; refuses to touch anything else.
expected<void> remove_stale(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return {};  // nothing there
  }
  if (!S_ISSOCK(st.st_mode)) {
    return error{errc::invalid_config,
                 "serve.socket: " + path + " exists and is not a socket: refusing to replace it"};
  }
  if (::unlink(path.c_str()) != 0) {
    return call_failed(path, "unlink", errno);
  }
  return {};
}

}  // namespace

expected<unique_fd> listen_unix(const std::string& path, unsigned mode) {
  auto address = address_of(path, errc::invalid_config);
  if (!address) {
    return std::move(address).error();
  }
  if (auto ok = remove_stale(path); !ok) {
    return std::move(ok).error();
  }
  auto s = new_socket(path);
  if (!s) {
    return s;
  }
  if (::bind(s->get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0) {
    return call_failed(path, "bind", errno);
  }
  // Before listen(): no client can connect while the mode is still the umask's.
  if (::chmod(path.c_str(), static_cast<mode_t>(mode)) != 0) {
    return call_failed(path, "chmod", errno);
  }
  if (::listen(s->get(), 64) != 0) {
    return call_failed(path, "listen", errno);
  }
  int flags = ::fcntl(s->get(), F_GETFL);
  ::fcntl(s->get(), F_SETFL, flags | O_NONBLOCK);
  return s;
}

expected<unique_fd> connect_unix(const std::string& path, std::chrono::milliseconds wait) {
  auto address = address_of(path, errc::invalid_argument);
  if (!address) {
    return std::move(address).error();
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    auto s = new_socket(path);
    if (!s) {
      return s;
    }
    if (::connect(s->get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) == 0) {
      return s;
    }
    int err = errno;
    bool absent = err == ENOENT || err == ECONNREFUSED;
    if (!absent || std::chrono::steady_clock::now() >= deadline) {
      if (absent) {
        return error{errc::not_found, "no Conveyor node listens on " + path +
                                          " (connect: " + std::strerror(err) + ")"};
      }
      if (err == EACCES || err == EPERM) {
        return error{errc::permission_denied,
                     "the Conveyor node's socket " + path + " does not admit this user (" +
                         std::strerror(err) + "; the node's serve.mode sets who may attach)"};
      }
      return call_failed(path, "connect", err);
    }
    // The node is not up yet: try again shortly (bounded by `wait`).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

expected<unique_fd> accept_client(int listener) {
  unique_fd c(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (!c) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) {
      return unique_fd{};
    }
    return call_failed("serve.socket", "accept", errno);
  }
  return c;
}

peer_identity peer_of(int socket) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return {};
  }
  return {cred.pid, cred.uid};
}

void set_send_timeout(int socket, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

}  // namespace conveyor
