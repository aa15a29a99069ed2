#pragma once
/// What this process has read from storage devices: /proc/self/io's read_bytes, the bytes
/// the block layer fetched for it (page cache hits are not in it). The node's JSON line turns
/// it into disk reads per epoch, beside what the loader itself read (storage_mb: through the
/// page cache).

#include <cstdint>

namespace conveyor {

/// Bytes read from storage devices so far; 0 where the kernel does not account I/O per task.
std::uint64_t storage_read_bytes();

}  // namespace conveyor
