#pragma once
/// Opening a file that outside input names, safely: the one way the readers open a dataset's
/// files (record shards, image files, tars, the files parts are left in) and the node reads the
/// small files its configuration names (core/base/bounded_file.hpp). A name may be a FIFO, a
/// device or a link to one, or lie on a file system that hangs.
///
///   - Only a regular file is opened: the path is stat()ed first (links are followed, to
///     regular files only) and anything else is refused before open(2) is called, so a FIFO
///     never blocks a reader and a device is never opened;
///   - open(2) itself is O_NONBLOCK | O_NOCTTY (a file swapped for a FIFO after the stat does
///     not block either), and the descriptor is checked with fstat() to be a regular file;
///   - the whole (stat, open, fstat) is bounded in time (core/base/bounded_call.hpp): a caller
///     that waits longer than `bound` gets errc::timed_out, and what the open gives when it
///     returns at last is closed. Only a file that is no link, in a directory known to lie on a
///     local file system (ext4, XFS, btrfs, tmpfs, an overlay, ...: learnt from an earlier open
///     there), is opened on the caller's thread (lstat, open O_NOFOLLOW, fstat): nothing there
///     waits on a network or a user-space server, and the hand-over to another thread (tens of
///     microseconds) would cost more than the open.

#include <chrono>
#include <cstdint>
#include <filesystem>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {

/// Which file a path led to, as stat(2) tells it: enough to tell that a file was replaced or
/// rewritten since it was first seen.
struct file_identity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  friend bool operator==(const file_identity& a, const file_identity& b) noexcept {
    return a.device == b.device && a.inode == b.inode && a.size == b.size &&
           a.mtime_ns == b.mtime_ns;
  }
};

/// A regular file open for reading.
struct regular_file {
  unique_fd fd;
  file_identity identity;  ///< of the open descriptor (fstat)
};

/// How long opening one file may take before the reader gives up on it: far longer than any
/// healthy file system takes, far shorter than the hang supervisor's bound on a sample.
inline constexpr std::chrono::milliseconds file_open_bound{10'000};

/// Opens the regular file at `path` for reading, as above. Errors name the path: not_found,
/// io_error ("is a FIFO, not a regular file", or open's reason), timed_out. Thread-safe.
expected<regular_file> open_regular_file(const std::filesystem::path& path,
                                         std::chrono::milliseconds bound = file_open_bound);

/// The identity of the regular file at `path` (stat, links followed), within `bound`. Errors
/// as open_regular_file's. Thread-safe.
expected<file_identity> identify_file(const std::filesystem::path& path,
                                      std::chrono::milliseconds bound = file_open_bound);

}  // namespace conveyor
