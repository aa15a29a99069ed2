#pragma once
/// Keeping freed memory for reuse in a long-running process that moves large buffers between
/// threads.
///
/// A node allocates a sample's bytes on its reader's thread (hundreds of KB), its tensor on a
/// preprocessor's and frees both on others. glibc then gives the tops of its arenas back to
/// the kernel (trim) and serves blocks above its mmap threshold with fresh mappings, so every
/// sample page-faults its buffers in again: 7% of a node's CPU at ~1000 samples/s on 2 cores
/// (bench/results/roi_decode.md). Raising both thresholds keeps the freed blocks in the arenas;
/// memory stays bounded by what the pipeline's credits allow at once (the RSS grew by ~7%).
///
/// For programs only (conveyor-node, bench_ceiling), and conveyor.Pipeline, which says so and
/// takes keep_freed_memory=False: a library does not set its host's allocator unasked. No
/// effect where the C library is not glibc.

namespace conveyor {

/// Sets glibc's trim threshold to 256 MiB and its mmap threshold to 32 MiB (its maximum).
/// Call once, early in main().
void keep_freed_memory_for_reuse() noexcept;

}  // namespace conveyor
