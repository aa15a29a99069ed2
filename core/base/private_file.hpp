#pragma once
/// Files that hold a secret (a cluster's run secret, a serving node's state key): read only when
/// nobody but this process's user may read or write them, and made so. Checked through the open
/// descriptor, so that what is checked is what is read.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/error.hpp"

namespace conveyor {

/// The bytes of the file at `path`, which must be a regular file owned by this user that its
/// group and others may neither read nor write, of `min_bytes` to `max_bytes` bytes. Errors
/// name the file and say why: errc::not_found, errc::permission_denied (others may read or
/// write it, or it is another user's), errc::invalid_config (not a regular file, the wrong
/// size), errc::io_error.
expected<std::vector<std::uint8_t>> read_private_file(const std::string& path,
                                                      std::size_t min_bytes, std::size_t max_bytes);

/// Writes `bytes` into a new file at `path` (mode 0600; never over an existing file or
/// through a symbolic link) and syncs it. errc::io_error naming the file otherwise.
expected<void> create_private_file(const std::string& path, const std::vector<std::uint8_t>& bytes);

}  // namespace conveyor
