#pragma once
/// Band-limited resampling through libsoxr (its "very high quality" recipe: a linear-phase
/// filter that passes 95% of the lower Nyquist band with ripple below 0.01 dB and stops above
/// it at 175 dB): how a decode brings a file of another rate to the recipe's rate, and the
/// "soxr" method of speed perturbation.

#include <cstddef>
#include <vector>

#include "conveyor/error.hpp"

namespace conveyor {

/// The `frames` frames of `channels` interleaved samples at `in` resampled from `in_rate` to
/// `out_rate` (rates > 0, channels >= 1): exactly ceil(frames * out_rate / in_rate) frames,
/// the filter's delay removed (output j lies at input position j * in_rate / out_rate),
/// zero-extended where the filter's tail ends short. errc::invalid_argument when libsoxr
/// refuses (its message). Thread-safe.
expected<std::vector<float>> soxr_resample(const float* in, std::size_t frames, unsigned channels,
                                           double in_rate, double out_rate);

}  // namespace conveyor
