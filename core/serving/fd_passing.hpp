#pragma once
/// Messages with an optional file descriptor attached (SCM_RIGHTS), over a connected
/// SOCK_SEQPACKET Unix socket: one send is one receive, boundaries kept (a stream socket
/// coalesces messages). How a node hands a client its shared regions and the small control
/// messages about them. Thread-safe per socket as the kernel is: one sender and one receiver
/// at a time.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {

/// Sends `size` bytes (at least 1) and, when `fd` >= 0, a duplicate of `fd` (the caller keeps
/// its own). Never raises SIGPIPE. errc::disconnected when the peer has gone, errc::io_error
/// otherwise, naming the reason.
expected<void> send_message(int socket, const void* bytes, std::size_t size, int fd = -1);

struct received_message {
  std::vector<std::uint8_t> bytes;
  unique_fd fd;  ///< the attached descriptor, if one came (close-on-exec)
};

/// Waits at most `timeout` for the next message of at most `max_size` bytes. Errors:
/// errc::disconnected when the peer has gone (end of stream, or reset with data unread),
/// errc::timed_out, errc::io_error when the message or its descriptor was cut short (a
/// descriptor that does not fit is lost, so it is an error, not a silent drop).
expected<received_message> receive_message(int socket, std::size_t max_size,
                                           std::chrono::milliseconds timeout);

}  // namespace conveyor
