#pragma once
/// The sampler: which sample comes at which position of an epoch, and which GPU each batch
/// of an epoch goes to. Pure functions of (dataset size, seed, epoch): every run, every
/// worker count and every restart sees the same order.

#include <cstdint>
#include <vector>

namespace conveyor {

/// The seed of epoch `epoch` of a run seeded `seed`; feeds sample_seed/step_seed.
std::uint64_t epoch_seed(std::uint64_t seed, std::uint64_t epoch) noexcept;

/// A permutation of 0..n-1 (Fisher-Yates from epoch_seed), or 0..n-1 in order when
/// `shuffle` is false.
std::vector<std::uint64_t> epoch_order(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch,
                                       bool shuffle = true);

/// Batches of `batch_size` in an epoch of `n` samples; the last one may be partial.
constexpr std::uint64_t batches_in_epoch(std::uint64_t n, std::uint64_t batch_size) noexcept {
  return batch_size == 0 ? 0 : (n + batch_size - 1) / batch_size;
}

/// Like a distributed sampler, batch b of an epoch goes to GPU b mod gpus: every GPU gets
/// distinct samples and every sample goes to exactly one GPU.
constexpr int gpu_of_batch(std::uint64_t batch, int gpus) noexcept {
  return static_cast<int>(batch % static_cast<std::uint64_t>(gpus));
}

}  // namespace conveyor
