#include "core/audio/soxr_resampler.hpp"

#include <soxr.h>

#include <string>

#include "core/audio/sinc_resampler.hpp"

namespace conveyor {

expected<std::vector<float>> soxr_resample(const float* in, std::size_t frames, unsigned channels,
                                           double in_rate, double out_rate) {
  const std::size_t out_frames = resampled_length(frames, in_rate, out_rate);
  std::vector<float> out(out_frames * channels, 0.0F);
  if (frames == 0) {
    return out;
  }
  const auto io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const auto quality = soxr_quality_spec(SOXR_VHQ, 0);
  std::size_t done = 0;
  // soxr_oneshot flushes the filter's tail and removes its delay: output 0 is input 0.
  if (soxr_error_t e = soxr_oneshot(in_rate, out_rate, channels, in, frames, nullptr, out.data(),
                                    out_frames, &done, &io, &quality, nullptr)) {
    return error{errc::invalid_argument, "libsoxr, " + std::to_string(in_rate) + " Hz to " +
                                             std::to_string(out_rate) + " Hz: " + e};
  }
  return out;
}

}  // namespace conveyor
