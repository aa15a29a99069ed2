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

// Whether a process listens on the socket at `address` (a connection attempt is accepted or
// queued); a refused or failed attempt means nobody does.
bool someone_listens(const std::string& path, const sockaddr_un& address) {
  auto s = new_socket(path);
  return s && ::connect(s->get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
}

// Removes a socket file a dead node left behind; refuses to touch anything else, or a socket
// another process still listens on.
expected<void> remove_stale(const std::string& path, const sockaddr_un& address) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return {};  // nothing there
  }
  if (!S_ISSOCK(st.st_mode)) {
    return error{errc::invalid_config,
                 "serve.socket: " + path + " exists and is not a socket: refusing to replace it"};
  }
  if (someone_listens(path, address)) {
    return error{errc::invalid_config, "serve.socket: a process listens on " + path +
                                           " already (another node?): refusing to replace it"};
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return call_failed(path, "unlink", errno);
  }
  return {};
}

}  // namespace

unix_listener::unix_listener(unix_listener&& o) noexcept
    : fd_(std::move(o.fd_)), path_(std::move(o.path_)), device_(o.device_), inode_(o.inode_) {
  o.path_.clear();
}

unix_listener& unix_listener::operator=(unix_listener&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = std::move(o.fd_);
    path_ = std::move(o.path_);
    device_ = o.device_;
    inode_ = o.inode_;
    o.path_.clear();
  }
  return *this;
}

unix_listener::~unix_listener() {
  close();
}

void unix_listener::close() noexcept {
  if (!path_.empty()) {
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_) {
      ::unlink(path_.c_str());
    }
    path_.clear();
  }
  fd_.reset();
}

expected<unix_listener> listen_unix(const std::string& path, unsigned mode) {
  auto address = address_of(path, errc::invalid_config);
  if (!address) {
    return std::move(address).error();
  }
  if (auto ok = remove_stale(path, *address); !ok) {
    return std::move(ok).error();
  }
  auto s = new_socket(path);
  if (!s) {
    return std::move(s).error();
  }
  if (::bind(s->get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0) {
    return call_failed(path, "bind", errno);
  }
  unix_listener out;
  out.fd_ = std::move(*s);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return call_failed(path, "stat", errno);
  }
  out.path_ = path;
  out.device_ = st.st_dev;
  out.inode_ = st.st_ino;
  // Before listen(): no client can connect while the mode is still the umask's.
  if (::chmod(path.c_str(), static_cast<mode_t>(mode)) != 0) {
    return call_failed(path, "chmod", errno);
  }
  if (::listen(out.fd(), 64) != 0) {
    return call_failed(path, "listen", errno);
  }
  int flags = ::fcntl(out.fd(), F_GETFL);
  ::fcntl(out.fd(), F_SETFL, flags | O_NONBLOCK);
  return out;
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
  unique_fd c(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!c) {
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED) {
      return unique_fd{};
    }
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
      return error{errc::resource_exhausted,
                   std::string("serve.socket: accept: ") + std::strerror(err)};
    }
    return call_failed("serve.socket", "accept", err);
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

expected<void> require_peer_user(int socket, const std::string& path,
                                 std::optional<uid_t> expected_uid) {
  const auto peer = peer_of(socket);
  const bool trusted =
      expected_uid ? peer.uid == *expected_uid : peer.uid == ::geteuid() || peer.uid == 0;
  if (trusted) {
    return {};
  }
  const auto wanted = expected_uid ? "user " + std::to_string(*expected_uid)
                                   : "this user (" + std::to_string(::geteuid()) + ") or root";
  return error{errc::permission_denied,
               "the process listening on " + path + " runs as user " + std::to_string(peer.uid) +
                   ", not " + wanted +
                   ": not trusted as a Conveyor node (set expected_uid if it is one)"};
}

}  // namespace conveyor
