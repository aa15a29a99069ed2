#pragma once
/// Slaney-style mel filters (the Auditory Toolbox's mel scale: linear below 1 kHz, logarithmic
/// above; each triangle scaled to unit area, "slaney" normalisation), as librosa.filters.mel
/// (htk=False, norm='slaney') and torchaudio's melscale_fbanks(norm='slaney',
/// mel_scale='slaney') define them. Computed in double and stored as float32: that is what
/// both agree with to float32 rounding, where DALI's and torchaudio's own float32 constructions
/// differ from them (and from each other) by up to 2e-4 (docs/rnnt-reference.md section 9).

#include <cstddef>
#include <vector>

namespace conveyor {

/// The filters over the n_fft / 2 + 1 bins of a real FFT, stored sparsely: filter m has the
/// weights of bins first[m] .. first[m] + weights[m].size() - 1. Plain value.
struct mel_filters {
  std::vector<std::size_t> first;
  std::vector<std::vector<float>> weights;

  std::size_t size() const noexcept { return first.size(); }
};

/// The same filters laid out for a branch-free product: every filter `width` weights from its
/// first bin (the widest filter's count rounded up to a multiple of 4; zeros after its own),
/// as doubles, filter after filter. A spectrum read with them needs `width` bins of room (zeros)
/// after its last. Plain value.
struct padded_mel_filters {
  std::vector<std::size_t> first;
  std::size_t width = 0;
  std::vector<double> weights;  ///< size() x width

  std::size_t size() const noexcept { return first.size(); }
};

padded_mel_filters padded(const mel_filters& filters);

/// `n_mels` filters between f_min and f_max Hz (0 <= f_min < f_max <= sample_rate / 2) for an
/// FFT of n_fft samples at sample_rate Hz. Thread-safe (pure). Preconditions: n_mels >= 1,
/// n_fft >= 2.
mel_filters slaney_mel_filters(int sample_rate, int n_fft, int n_mels, double f_min, double f_max);

}  // namespace conveyor
