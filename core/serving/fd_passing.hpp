#pragma once
/// Messages with an optional file descriptor attached (SCM_RIGHTS), over a connected
/// SOCK_SEQPACKET Unix socket: one send is one receive, boundaries kept (a stream socket
/// coalesces messages). How a node hands a client its shared regions and the small control
/// messages about them. Thread-safe per socket as the kernel is: one sender and one receiver
/// at a time.
///
/// The peer may be hostile: every descriptor that arrives is owned by the received message
/// (closed with it unless the caller takes it), however many came in however many control
/// messages; descriptors beyond max_received_descriptors are closed by the kernel and the
/// message is an error.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {

/// Descriptors one receive takes in; more than this in one message is an error (the rest are
/// closed by the kernel, MSG_CTRUNC).
inline constexpr std::size_t max_received_descriptors = 16;

/// Sends `size` bytes (at least 1) and, when `fd` >= 0, a duplicate of `fd` (the caller keeps
/// its own). Never raises SIGPIPE. `wait`: false sends only if the socket takes the message
/// now (errc::resource_exhausted when its buffer is full), true blocks as the socket does.
/// errc::disconnected when the peer has gone, errc::io_error otherwise, naming the reason.
expected<void> send_message(int socket, const void* bytes, std::size_t size, int fd = -1,
                            bool wait = true);

struct received_message {
  std::vector<std::uint8_t> bytes;
  std::vector<unique_fd> fds;  ///< every descriptor that came with it (close-on-exec)
};

/// Waits at most `timeout` for the next message of at most `max_size` bytes. Errors:
/// errc::disconnected when the peer has gone (end of stream, or reset with data unread),
/// errc::timed_out, errc::invalid_argument when the message or its descriptors were cut short
/// (longer than `max_size`, more than max_received_descriptors descriptors: what came is
/// closed), errc::io_error for a broken socket.
expected<received_message> receive_message(int socket, std::size_t max_size,
                                           std::chrono::milliseconds timeout);

}  // namespace conveyor
