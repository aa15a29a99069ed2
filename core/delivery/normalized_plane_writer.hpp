#pragma once
/// Writing one normalised plane into a batch: the table lookups of normalize_table::plane, with
/// AVX2 gathers and streaming (non-temporal) stores where the CPU has AVX2. A batch is written
/// once and read later by the trainer (often another core, or a copy to the GPU): streaming
/// stores skip reading the batch's cache lines before writing them, which is most of the cost
/// of writing 600 KB of floats per sample into memory that is not in any cache (the loop is
/// 2.2x faster than the scalar one, bench/results/roi_decode.md). The same bits either way.

#include <cstddef>
#include <cstdint>

#include "core/transforms/normalize_table.hpp"

namespace conveyor {

/// out[i] = table.value(c, in[i]) for i < count. Call store_fence() after the last plane of a
/// batch, before the batch is handed over (streaming stores are weakly ordered).
void write_normalized_plane(const normalize_table& table, int c, const std::uint8_t* in,
                            std::size_t count, float* out) noexcept;

/// Orders the streaming stores before what follows (sfence; nothing without AVX2).
void store_fence() noexcept;

}  // namespace conveyor
