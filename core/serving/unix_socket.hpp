#pragma once
/// The Unix sockets of serving: a node listens on a path, clients connect to it; both ends are
/// SOCK_SEQPACKET (message boundaries kept, see fd_passing.hpp), close-on-exec.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {

/// A socket a node listens on (non-blocking), and the file it bound at its path. Destroying it
/// closes the socket and removes the file only if the file at the path is still the one it
/// bound: a node that exits never removes the socket of another node that took the path since.
/// Move-only; not thread-safe.
class unix_listener {
 public:
  unix_listener() = default;
  unix_listener(unix_listener&& o) noexcept;
  unix_listener& operator=(unix_listener&& o) noexcept;
  unix_listener(const unix_listener&) = delete;
  unix_listener& operator=(const unix_listener&) = delete;
  ~unix_listener();

  int fd() const noexcept { return fd_.get(); }
  const std::string& path() const noexcept { return path_; }
  /// Closes the socket and removes its file if it is still this listener's (see above).
  void close() noexcept;

 private:
  friend expected<unix_listener> listen_unix(const std::string& path, unsigned mode);
  unique_fd fd_;
  std::string path_;
  dev_t device_ = 0;
  ino_t inode_ = 0;
};

/// Listens on `path` with permission bits `mode` (set before the first connection can come).
/// A socket file at `path` that nobody listens on any more (a node that died) is replaced; one
/// that a process still listens on is errc::invalid_config (another node serves there), as is
/// any other file there, or a path longer than a socket path can be. errc::io_error naming the
/// call otherwise.
expected<unix_listener> listen_unix(const std::string& path, unsigned mode);

/// Connects to the node listening on `path`, trying again until `wait` has passed while no
/// node listens there yet. Errors name the path: errc::not_found (nothing listens: no such
/// file, or connection refused), errc::permission_denied (the socket's mode keeps this user
/// out), errc::invalid_argument (a path too long), errc::io_error otherwise.
expected<unique_fd> connect_unix(const std::string& path, std::chrono::milliseconds wait);

/// The next pending connection, non-blocking: an empty fd when none is pending;
/// errc::resource_exhausted when this process (EMFILE) or the system (ENFILE) has no
/// descriptor left for it, or the kernel no memory (the connection stays pending);
/// errc::io_error otherwise.
expected<unique_fd> accept_client(int listener);

/// The process id and user id of the peer of a connected socket (-1 / -1 if unknown).
struct peer_identity {
  pid_t pid = -1;
  uid_t uid = static_cast<uid_t>(-1);
};
peer_identity peer_of(int socket);

/// Checks that the process at the other end of `socket` (a node, as a client sees it) runs as
/// `expected_uid`, or, when that is unset, as this process's user or root: a process of
/// another user that squats the path of a node's socket is errc::permission_denied naming
/// `path` and both users.
expected<void> require_peer_user(int socket, const std::string& path,
                                 std::optional<uid_t> expected_uid);

}  // namespace conveyor
