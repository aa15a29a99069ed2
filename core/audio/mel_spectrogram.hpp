#pragma once
/// Mel spectrograms of speech, as MLPerf RNN-T's DALI pipeline computes them
/// (docs/rnnt-reference.md section 9): frames of `window` samples every `hop`, centred on
/// sample t * hop and reflected at the ends (torch.stft's center=True, pad_mode='reflect'),
/// weighted by DALI's Hann window (0.5 (1 - cos(2 pi (t + 0.5) / window)): symmetric, never
/// 0; its float32 values, applied in double), zero-padded to n_fft; the power of each bin
/// (FFTW, in double) through Slaney mel
/// filters (mel_filters.hpp); then, with `log`, ln(max(mel, log_floor)) (DALI's ToDecibels
/// with multiplier ln 10 and cutoff ln 1e-20). Rows are frames: [frames, n_mels], time-major.

#include <cstddef>
#include <memory>
#include <vector>

#include "conveyor/error.hpp"
#include "core/audio/mel_filters.hpp"

namespace conveyor {

struct spectrogram_options {
  int sample_rate = 16000;
  int n_fft = 512;
  int window = 320;  ///< samples per frame, <= n_fft
  int hop = 160;
  int n_mels = 80;
  double f_min = 0.0;
  double f_max = 0.0;  ///< 0: sample_rate / 2
  bool log = true;
  double log_floor = 1e-20;
};

/// Immutable once made: compute() is const and may run on any number of threads at once (each
/// thread makes its FFTW plan once, under a process-wide lock, since FFTW's planner is not
/// thread-safe; FFTW_ESTIMATE, so that every thread's plan computes the same).
class mel_spectrogram {
 public:
  /// errc::invalid_argument naming the option out of range (rates and sizes >= 1, window <=
  /// n_fft, 0 <= f_min < f_max <= sample_rate / 2, log_floor a normal float32 in [1e-37, 1e37]).
  static expected<mel_spectrogram> make(const spectrogram_options& options);

  /// Frames of an n-sample signal: n / hop + 1.
  std::size_t frames(std::size_t n) const noexcept;
  std::size_t bands() const noexcept { return filters_.size(); }
  const spectrogram_options& options() const noexcept { return options_; }

  /// Writes frames(n) x bands() float32 to `out`. Precondition: n >= 2 (a reflection needs
  /// two samples); the caller refuses shorter signals.
  void compute(const float* x, std::size_t n, float* out) const;

 private:
  mel_spectrogram(spectrogram_options options, std::vector<float> window, mel_filters filters)
      : options_(options), window_(std::move(window)), filters_(padded(filters)) {}

  spectrogram_options options_;
  std::vector<float> window_;
  padded_mel_filters filters_;
};

}  // namespace conveyor
