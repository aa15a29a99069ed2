#pragma once
/// The bound a size read from storage (an index, a header, a store's listing) is held to before
/// a buffer is sized by it: no sample can be larger than the memory of the machine reading it.
/// Checked first because an allocation that size is not a clean failure everywhere: with
/// overcommit it succeeds and is zero-filled page by page until the kernel kills the process,
/// and under AddressSanitizer a throwing `new` that fails aborts the process.

#include <cstdint>
#include <optional>
#include <string>

#include "conveyor/error.hpp"

namespace conveyor {

/// The machine's physical memory in bytes (sysconf), read once; /sys/fs/cgroup/memory.max where
/// that is smaller (a container's own cgroup, as the container sees it).
std::uint64_t machine_memory_bytes();

/// Memory the machine can still give without swapping (/proc/meminfo's MemAvailable, in
/// bytes); nullopt where it cannot be read.
std::optional<std::uint64_t> available_memory_bytes();

/// errc::io_error naming `what` and both sizes when `bytes` is more than machine_memory_bytes().
expected<void> fits_in_memory(std::uint64_t bytes, const std::string& what);

}  // namespace conveyor
