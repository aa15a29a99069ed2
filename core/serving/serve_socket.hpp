#pragma once
/// The serving protocol's messages (serve_protocol.hpp) over a connected SOCK_SEQPACKET socket
/// (fd_passing.hpp): encode and send, receive and decode. What node and client both do.

#include <chrono>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"
#include "core/serving/serve_protocol.hpp"

namespace conveyor {

/// A message and the descriptor that came with it, if its type takes one.
struct serve_received {
  serve::message message;
  unique_fd fd;
};

/// Sends `m` with, when `fd` >= 0, a duplicate of `fd`. Errors as send_message's; `wait`
/// false never blocks (errc::resource_exhausted when the peer's buffer is full).
expected<void> send_serve(int socket, const serve::message& m, int fd = -1, bool wait = true);

/// Waits at most `timeout` for the next message. Errors as receive_message's (timed_out,
/// disconnected, io_error, invalid_argument for a message cut short), and
/// errc::invalid_argument for bytes that are not a message, or for descriptors that came with
/// a message whose type takes none (or more than one): every descriptor is closed then.
expected<serve_received> receive_serve(int socket, std::chrono::milliseconds timeout);

}  // namespace conveyor
