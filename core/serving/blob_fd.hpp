#pragma once
/// Bytes too large for a control message (a client's resume state, up to ~160 KB) passed over
/// the serving socket as a sealed memfd sent with the message that names their length.

#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {

/// A memfd named `name` holding `bytes`, sealed against any change. errc::io_error on failure.
expected<unique_fd> blob_fd(const std::vector<std::uint8_t>& bytes, const std::string& name);

/// The first `size` bytes of the file behind `fd` (at most `limit`), which must be a memfd
/// sealed against writes and shrinking (what blob_fd() makes): errc::invalid_argument when
/// `size` is over the limit, the descriptor is anything else (a pipe, a socket, a file on a
/// disk a read could wait on) or the file is shorter; errc::io_error when it cannot be read.
/// `what` names the bytes in messages.
expected<std::vector<std::uint8_t>> read_blob_fd(int fd, std::uint64_t size, std::uint64_t limit,
                                                 const std::string& what);

}  // namespace conveyor
