#pragma once
/// The serving protocol's messages (serve_protocol.hpp) over a connected SOCK_SEQPACKET socket
/// (fd_passing.hpp): encode and send, receive and decode. What node and client both do.

#include <chrono>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"
#include "core/serving/serve_protocol.hpp"

namespace conveyor {

/// A message and the descriptor that came with it, if one did.
struct serve_received {
  serve::message message;
  unique_fd fd;
};

/// Sends `m` with, when `fd` >= 0, a duplicate of `fd`. Errors as send_message's.
expected<void> send_serve(int socket, const serve::message& m, int fd = -1);

/// Waits at most `timeout` for the next message. Errors as receive_message's (timed_out,
/// disconnected, io_error), and errc::invalid_argument for bytes that are not a message.
expected<serve_received> receive_serve(int socket, std::chrono::milliseconds timeout);

}  // namespace conveyor
