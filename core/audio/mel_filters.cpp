#include "core/audio/mel_filters.hpp"

#include <algorithm>
#include <cmath>

namespace conveyor {
namespace {

constexpr double linear_hz_per_mel = 200.0 / 3.0;
constexpr double log_from_hz = 1000.0;
constexpr double log_from_mel = log_from_hz / linear_hz_per_mel;  // 15

double log_step() {
  return std::log(6.4) / 27.0;
}

double hz_to_mel(double hz) {
  return hz >= log_from_hz ? log_from_mel + std::log(hz / log_from_hz) / log_step()
                           : hz / linear_hz_per_mel;
}

double mel_to_hz(double mel) {
  return mel >= log_from_mel ? log_from_hz * std::exp(log_step() * (mel - log_from_mel))
                             : linear_hz_per_mel * mel;
}

}  // namespace

mel_filters slaney_mel_filters(int sample_rate, int n_fft, int n_mels, double f_min, double f_max) {
  const auto bins = static_cast<std::size_t>(n_fft / 2 + 1);
  const auto mels = static_cast<std::size_t>(n_mels);
  // librosa: the band edges evenly spaced in mel, the bins at k * rate / n_fft (linspace).
  const double mel_low = hz_to_mel(f_min);
  const double mel_high = hz_to_mel(f_max);
  std::vector<double> edges(mels + 2);
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const double mel =
        mel_low + (mel_high - mel_low) * static_cast<double>(i) / static_cast<double>(mels + 1);
    edges[i] = mel_to_hz(mel);
  }
  const double nyquist = static_cast<double>(sample_rate) / 2.0;
  auto bin_hz = [&](std::size_t k) {
    return nyquist * static_cast<double>(k) / static_cast<double>(bins - 1);
  };
  mel_filters out;
  for (std::size_t m = 0; m < mels; ++m) {
    const double rise = edges[m + 1] - edges[m];
    const double fall = edges[m + 2] - edges[m + 1];
    const double area = 2.0 / (edges[m + 2] - edges[m]);
    std::size_t first = bins;
    std::vector<float> weights;
    for (std::size_t k = 0; k < bins; ++k) {
      const double f = bin_hz(k);
      const double w = std::max(0.0, std::min((f - edges[m]) / rise, (edges[m + 2] - f) / fall));
      if (w > 0.0) {
        if (first == bins) {
          first = k;
        }
        weights.resize(k - first + 1, 0.0F);
        weights.back() = static_cast<float>(w * area);
      }
    }
    out.first.push_back(first == bins ? 0 : first);
    out.weights.push_back(std::move(weights));
  }
  return out;
}

padded_mel_filters padded(const mel_filters& filters) {
  padded_mel_filters out;
  out.first = filters.first;
  for (const auto& w : filters.weights) {
    out.width = std::max(out.width, w.size());
  }
  out.width = (out.width + 3) / 4 * 4;
  out.weights.assign(filters.size() * out.width, 0.0);
  for (std::size_t m = 0; m < filters.size(); ++m) {
    std::copy(filters.weights[m].begin(), filters.weights[m].end(),
              out.weights.begin() + static_cast<std::ptrdiff_t>(m * out.width));
  }
  return out;
}

}  // namespace conveyor
