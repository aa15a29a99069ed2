#pragma once
/// The Unix sockets of serving: a node listens on a path, clients connect to it; both ends are
/// SOCK_SEQPACKET (message boundaries kept, see fd_passing.hpp), close-on-exec.

#include <sys/types.h>

#include <chrono>
#include <string>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {

/// Listens on `path` with permission bits `mode` (set before the first connection can come).
/// A stale socket file at `path` (a node that died) is replaced; any other file there is
/// errc::invalid_config naming it, as is a path longer than a socket path can be.
/// errc::io_error naming the call otherwise.
expected<unique_fd> listen_unix(const std::string& path, unsigned mode);

/// Connects to the node listening on `path`, trying again until `wait` has passed while no
/// node listens there yet. Errors name the path: errc::not_found (nothing listens: no such
/// file, or connection refused), errc::permission_denied (the socket's mode keeps this user
/// out), errc::invalid_argument (a path too long), errc::io_error otherwise.
expected<unique_fd> connect_unix(const std::string& path, std::chrono::milliseconds wait);

/// The next pending connection, non-blocking: an empty fd when none is pending.
expected<unique_fd> accept_client(int listener);

/// The process id and user id of the peer of a connected socket (-1 / -1 if unknown).
struct peer_identity {
  pid_t pid = -1;
  uid_t uid = static_cast<uid_t>(-1);
};
peer_identity peer_of(int socket);

/// Sends on `socket` give up after `timeout` (a client that stopped reading), instead of
/// blocking the node.
void set_send_timeout(int socket, std::chrono::milliseconds timeout);

}  // namespace conveyor
