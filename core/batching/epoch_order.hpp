#pragma once
/// The sampler: which sample comes at which position of an epoch, and which GPU each batch
/// of an epoch goes to. Pure functions of (dataset size, seed, epoch, sample_order): every run,
/// every worker count and every restart sees the same order.

#include <cstdint>
#include <string>
#include <vector>

namespace conveyor {

/// How an epoch's order is drawn (dataset.shuffle).
enum class shuffle_mode : std::uint8_t {
  none = 0,    ///< the dataset's order
  global = 1,  ///< a random permutation of every sample
  /// Blocks of `block` consecutive samples (ids), the blocks in a random order, the samples of
  /// each `span` blocks together (consecutive in that order) in a random order: the readers
  /// of a dataset in large files (an object store's) fetch whole blocks, and the samples of a
  /// batch still come from `span` blocks all over the dataset (MosaicML Streaming's "py1b").
  blocks = 2,
};

struct sample_order {
  shuffle_mode mode = shuffle_mode::global;
  std::uint64_t block = 0;  ///< blocks: samples of a block (the last one may be short), >= 1
  std::uint64_t span = 0;   ///< blocks: blocks shuffled together, >= 1

  /// global, or none when `shuffle` is false.
  static sample_order shuffled(bool shuffle) noexcept {
    return {shuffle ? shuffle_mode::global : shuffle_mode::none, 0, 0};
  }
  /// Blocks of `block` samples, shuffled together `span` blocks at a time.
  static sample_order in_blocks(std::uint64_t block, std::uint64_t span) noexcept {
    return {shuffle_mode::blocks, block, span};
  }
  bool operator==(const sample_order& o) const noexcept {
    return mode == o.mode && block == o.block && span == o.span;
  }
  bool operator!=(const sample_order& o) const noexcept { return !(*this == o); }
};

/// A mode of this enum, block and span >= 1 for blocks and 0 otherwise (what came over a
/// socket or out of a file is checked with this before an order is drawn from it).
bool is_sound(const sample_order& order) noexcept;
/// "none", "global", "blocks of 92 samples, 32 a span".
std::string describe(const sample_order& order);
/// The dataset.shuffle value of a mode: "none", "global", "blocks".
const char* to_string(shuffle_mode mode) noexcept;

/// The seed of epoch `epoch` of a run seeded `seed`; feeds sample_seed/step_seed.
std::uint64_t epoch_seed(std::uint64_t seed, std::uint64_t epoch) noexcept;

/// The samples of epoch `epoch` in order: a permutation of 0..n-1 drawn as `order` says (our
/// own Fisher-Yates over mt19937_64 seeded epoch_seed(seed, epoch)). Precondition: block and
/// span >= 1 for blocks.
std::vector<std::uint64_t> epoch_order(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch,
                                       const sample_order& order = {});

/// Blocks only: the span of each block in epoch `epoch` (0, 1, ...: the order is span 0's
/// samples, then span 1's, ...), as epoch_order draws them. The block of sample id is id /
/// order.block. Empty for other modes.
std::vector<std::uint64_t> block_spans(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch,
                                       const sample_order& order);

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
