#pragma once
/// Small files read whole (a vocabulary, a list): never more than a limit, never blocking on
/// something that is not a regular file.

#include <cstddef>
#include <string>

#include "conveyor/error.hpp"

namespace conveyor {

/// The bytes of the regular file at `path` when it holds at most `max_bytes`. Opened
/// O_NONBLOCK, so that a FIFO without a writer cannot block the open, and refused from fstat
/// before anything is read when it is not a regular file (a FIFO, a device such as /dev/zero,
/// a socket, a directory) or is over max_bytes; at most max_bytes + 1 bytes are read, so a
/// file that grows meanwhile is refused too. Errors name the path and say why:
/// errc::not_found (no such file), errc::invalid_config (not a regular file, too large),
/// errc::io_error (cannot be opened or read). Thread-safe.
expected<std::string> read_bounded_file(const std::string& path, std::size_t max_bytes);

}  // namespace conveyor
