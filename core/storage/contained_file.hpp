#pragma once
/// The rule for symbolic links in a dataset directory that a scan walks (part_files.hpp:
/// conveyor-pack --parts and the npy_pairs layout; librispeech.hpp): a link whose name makes
/// it a file the scan reads is followed only where its target, every link in it resolved, lies
/// inside the dataset directory; one that leads out of it stops the scan with an error naming
/// the link and where it leads. Links the scan would not read (a README) are left alone.
///
/// Why: a dataset directory is often writable by others than whoever packs or serves it (a
/// shared scratch space, an unpacked download). Following a link out of it would pack or serve
/// whatever file the link names (~/.ssh/id_rsa, a token) into shards that others read.
/// Refused, not skipped: a dataset never silently lacks a sample. Links that stay inside (a
/// deduplicated file, a renamed split) keep working; to take files from elsewhere, copy them
/// in or point the dataset at a directory that holds them. Directories reached through a link
/// are not walked (as before): only files the scan meets are read.
///
/// The scan keeps the resolved target, which has no link in it then, and the read opens that:
/// a link changed after the scan is not followed, but the check is of the tree as the scan saw
/// it (a directory renamed between scan and read is not caught).

#include <filesystem>
#include <optional>

#include "conveyor/error.hpp"

namespace conveyor {

/// `root` with every link in it resolved (std::filesystem::canonical), once it is a directory:
/// what contained_file checks targets against. Errors as require_directory's, or io_error
/// naming `root` when it cannot be resolved.
expected<std::filesystem::path> canonical_directory(const std::filesystem::path& root);

/// The file a scan of `root` (canonical_directory's) reads for `entry`, an entry under it:
/// its own path for a regular file; the resolved target of a symbolic link that leads to a
/// regular file inside `root`; std::nullopt for anything else (a directory, a FIFO, a device,
/// a socket, or a link inside `root` to one of those or to nothing). errc::invalid_argument
/// naming the link and its target for a link that leads outside `root`; errc::io_error naming
/// a link that cannot be resolved (a loop). Thread-safe.
expected<std::optional<std::filesystem::path>> contained_file(
    const std::filesystem::directory_entry& entry, const std::filesystem::path& root);

}  // namespace conveyor
