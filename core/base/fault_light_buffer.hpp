#pragma once
/// A large byte buffer whose pages cost one fault each per 2 MiB, not per 4 KiB: what a range
/// GET from an object store writes into (core/remote/remote_store.hpp). Fresh memory of a
/// plain allocation faults in page by page as the answer is written: on this project's VMs that
/// cost a first epoch from a store a third of its rate (662 against 1019 samples/s in blocks,
/// bench/results/s3_blocks.md).
/// Sizes from 2 MiB are mapped 2 MiB-aligned with transparent huge pages advised (advice: small
/// pages where the kernel refuses); smaller ones come from the heap, whose freed memory the
/// next ones reuse (a mapping of their own would be fresh pages, and two system calls, for
/// every one). The contents are undefined (the caller writes them).

#include <cstddef>
#include <cstdint>
#include <memory>

namespace conveyor {

/// A buffer of `size` bytes; null when no memory can be had (never throws).
std::shared_ptr<std::uint8_t[]> fault_light_buffer(std::size_t size) noexcept;

}  // namespace conveyor
