#pragma once
/// The node end of a client, as the client sees it: a connected socket that carries the
/// serving protocol's messages (core/serving/serve_protocol.hpp). Internal to the library.

#include <chrono>
#include <string>

#include "conveyor/error.hpp"
#include "core/serving/fd_passing.hpp"
#include "core/serving/serve_protocol.hpp"
#include "core/serving/unique_fd.hpp"

namespace conveyor {

/// A message and the descriptor that came with it.
struct client_message {
  serve::message message;
  unique_fd fd;
};

/// Sends `m`; errors name `socket_path`. Thread-safe as send(2) is.
expected<void> send_to_node(int socket, const std::string& socket_path, const serve::message& m);

/// Waits at most `timeout` for the node's next message; a failure message from the node
/// becomes its error (the node's code and text). Errors name `socket_path`.
expected<client_message> receive_from_node(int socket, const std::string& socket_path,
                                           std::chrono::milliseconds timeout);

}  // namespace conveyor
