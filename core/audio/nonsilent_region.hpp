#pragma once
/// Where the sound is: DALI's NonsilentRegion (operators/audio/nonsilence_op.h, with
/// kernels/signal/moving_mean_square.cc), which MLPerf RNN-T trims silence with
/// (docs/rnnt-reference.md section 7).

#include <cstddef>

namespace conveyor {

struct sample_range {
  std::size_t begin = 0;
  std::size_t length = 0;
};

struct nonsilence_options {
  double cutoff_db = -60.0;           ///< loud: a window's mean square >= max * 10^(cutoff/10)
  std::size_t window = 2048;          ///< samples per mean-square window
  std::size_t reset_interval = 8192;  ///< the running sum starts afresh this often (0: never)
};

/// The region from the first loud window's start to the last loud window's end: with
/// W = min(window, n), mms[i] the float32 mean of x[i..i+W)^2 (a running sum, restarted every
/// reset_interval - W + 1 positions, as DALI computes it), threshold = max(mms) *
/// 10^(cutoff_db / 10) in float32, it is [first i with mms[i] >= threshold, last such i + W).
/// {0, 0} for n = 0. Thread-safe (pure). Preconditions: window >= 1, reset_interval 0 or >=
/// window.
sample_range nonsilent_region(const float* x, std::size_t n,
                              const nonsilence_options& options = {});

}  // namespace conveyor
