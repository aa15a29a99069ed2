#pragma once
/// DALI's windowed-sinc resampler (kernels/signal/resampling.h, the version with the SSE2 loop
/// that DALI 0.28 ships): the resampler behind MLPerf RNN-T's speed perturbation
/// (docs/rnnt-reference.md section 6). Output j lies at input position j * in_rate / out_rate;
/// it is the sum of x[i] * w(i - p) over the inputs within 16 samples of p, w = sinc(x) *
/// Hann(x / 16) taken from a table of 64 entries per lobe by linear interpolation. There is
/// no anti-aliasing filter (downsampling keeps the input's band, as DALI does) and inputs past
/// either end count as 0 (the ends are not renormalised). Positions are generated as DALI
/// generates them: per block of 1024 outputs the block's start in double, then one float32
/// addition of float32(in_rate / out_rate) per output.
///
/// Where DALI 0.28's SSE2 loop rounds the table index instead of truncating it (a bug it fixed
/// in 2022), this does too, for the same taps: it follows the reference's arithmetic to float
/// rounding (tests/python/test_rnnt_exact.py), ~1e-4 of the signal away from interpolating.

#include <cstddef>

namespace conveyor {

/// ceil(n * out_rate / in_rate), computed in double as DALI computes it. Rates > 0.
std::size_t resampled_length(std::size_t n, double in_rate, double out_rate) noexcept;

/// Resamples the `n` samples at `in` from `in_rate` to `out_rate` into `out`, which holds
/// resampled_length(n, in_rate, out_rate) samples. Rates > 0; `in` and `out` do not overlap.
/// Thread-safe (the window table is built once, on first use).
void sinc_resample(const float* in, std::size_t n, double in_rate, double out_rate, float* out);

}  // namespace conveyor
