#pragma once
/// Small files read whole (a vocabulary, a list): never more than a limit, never blocking on
/// something that is not a regular file.

#include <cstddef>
#include <string>

#include "conveyor/error.hpp"

namespace conveyor {

/// The bytes of the regular file at `path` when it holds at most `max_bytes`. Opened as
/// open_regular_file opens (core/base/regular_file.hpp: what is not a regular file, a FIFO, a
/// device such as /dev/zero, a socket, a directory, is refused before it is opened, and the
/// open is bounded in time), refused from its size before anything is read when it is over
/// max_bytes; at most max_bytes + 1 bytes are read, so a file that grows meanwhile is refused
/// too. Errors name the path and say why: errc::not_found (no such file), errc::invalid_config
/// (too large), errc::io_error (not a regular file, cannot be opened or read), errc::timed_out.
/// Thread-safe.
expected<std::string> read_bounded_file(const std::string& path, std::size_t max_bytes);

}  // namespace conveyor
