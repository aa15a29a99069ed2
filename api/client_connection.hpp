#pragma once
/// The node end of a client, as the client sees it: the serving protocol's messages
/// (core/serving/serve_socket.hpp), with errors that name the node's socket. Internal to the
/// library.

#include <chrono>
#include <string>

#include "conveyor/error.hpp"
#include "core/serving/serve_socket.hpp"

namespace conveyor {

/// Sends `m` (with a duplicate of `fd` when it is >= 0); errors name `socket_path`. Thread-safe
/// as send(2) is.
expected<void> send_to_node(int socket, const std::string& socket_path, const serve::message& m,
                            int fd = -1);

/// Waits at most `timeout` for the node's next message; a failure message from the node
/// becomes its error (the node's code and text). Errors name `socket_path`.
expected<serve_received> receive_from_node(int socket, const std::string& socket_path,
                                           std::chrono::milliseconds timeout);

}  // namespace conveyor
