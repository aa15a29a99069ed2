#include "core/audio/mel_spectrogram.hpp"

#include <fftw3.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>

// log8 passes 32-byte vectors by value; it is always inlined into take_log's clones, so no
// call ever has the AVX or the SSE calling convention.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace conveyor {
namespace {

/// FFTW's planner (and plan destruction) is not thread-safe: every call goes through here.
std::mutex& planner_lock() {
  static std::mutex lock;
  return lock;
}

/// One thread's real FFT of n points: its plan and buffers (FFTW's allocator aligns them).
class fft_plan {
 public:
  explicit fft_plan(int n) : n_(n) {
    in_ = fftw_alloc_real(static_cast<std::size_t>(n));
    out_ = fftw_alloc_complex(static_cast<std::size_t>(n / 2 + 1));
    std::lock_guard<std::mutex> hold(planner_lock());
    plan_ = fftw_plan_dft_r2c_1d(n, in_, out_, FFTW_ESTIMATE);
  }
  ~fft_plan() {
    {
      std::lock_guard<std::mutex> hold(planner_lock());
      fftw_destroy_plan(plan_);
    }
    fftw_free(in_);
    fftw_free(out_);
  }
  fft_plan(const fft_plan&) = delete;
  fft_plan& operator=(const fft_plan&) = delete;

  int size() const noexcept { return n_; }
  double* input() noexcept { return in_; }
  const fftw_complex* output() const noexcept { return out_; }
  void run() noexcept { fftw_execute(plan_); }

 private:
  int n_;
  double* in_;
  fftw_complex* out_;
  fftw_plan plan_;
};

/// This thread's plan for n points (a thread keeps the plans of every size it has used).
fft_plan& thread_plan(int n) {
  thread_local std::vector<std::unique_ptr<fft_plan>> plans;
  for (auto& p : plans) {
    if (p->size() == n) {
      return *p;
    }
  }
  plans.push_back(std::make_unique<fft_plan>(n));
  return *plans.back();
}

/// DALI's Hann window (kernels/signal/window/window_functions.h): sampled at half-sample
/// offsets, computed in double, stored as float32.
std::vector<float> dali_hann(int n) {
  std::vector<float> w(static_cast<std::size_t>(n));
  for (int t = 0; t < n; ++t) {
    w[static_cast<std::size_t>(t)] =
        static_cast<float>(0.5 * (1.0 - std::cos(2.0 * M_PI / n * (t + 0.5))));
  }
  return w;
}

using float8 = float __attribute__((vector_size(32)));
using int8 = std::int32_t __attribute__((vector_size(32)));

/// ln(x) of eight finite normal floats > 0, within 2 ulp: Cephes' logf (x = m 2^e, m in
/// [sqrt(1/2), sqrt(2)), a degree-9 polynomial in m - 1), branch-free, eight lanes at once,
/// where libm's logf is a call per value, in place. Always inlined into its caller, and by
/// reference: a 32-byte vector crosses no call (clang refuses one passed by value into the
/// clone built without AVX).
__attribute__((always_inline)) inline void log8(float8& x) {
  int8 bits;
  std::memcpy(&bits, &x, sizeof bits);
  float8 e = __builtin_convertvector(((bits >> 23) & 0xFF) - 126, float8);
  bits = (bits & 0x807FFFFF) | 0x3F000000;  // m in [1/2, 1)
  float8 m;
  std::memcpy(&m, &bits, sizeof m);
  const auto low = m < 0.707106781186547524F;
  e = low ? e - 1.0F : e;
  const float8 f = (low ? m + m : m) - 1.0F;
  const float8 z = f * f;
  float8 y = 7.0376836292E-2F - f * 0.0F;
  y = y * f - 1.1514610310E-1F;
  y = y * f + 1.1676998740E-1F;
  y = y * f - 1.2420140846E-1F;
  y = y * f + 1.4249322787E-1F;
  y = y * f - 1.6668057665E-1F;
  y = y * f + 2.0000714765E-1F;
  y = y * f - 2.4999993993E-1F;
  y = y * f + 3.3333331174E-1F;
  y = y * f * z;
  y += -2.12194440E-4F * e;
  y += -0.5F * z;
  x = f + y + 0.693359375F * e;
}

/// Index i of a signal of n >= 2 samples reflected at both ends (numpy's 'reflect': the edge
/// sample is not repeated), as often as it takes.
std::size_t reflect(std::int64_t i, std::int64_t n) {
  const std::int64_t period = 2 * n - 2;
  i %= period;
  if (i < 0) {
    i += period;
  }
  return static_cast<std::size_t>(i < n ? i : period - i);
}

expected<void> check(const spectrogram_options& o) {
  auto bad = [](const std::string& what) {
    return error{errc::invalid_argument, "mel spectrogram: " + what};
  };
  if (o.sample_rate < 1 || o.n_fft < 2 || o.window < 1 || o.hop < 1 || o.n_mels < 1) {
    return bad("sample_rate, n_fft, window, hop and n_mels must be >= 1 (n_fft >= 2)");
  }
  if (o.window > o.n_fft) {
    return bad("window (" + std::to_string(o.window) + ") must be <= n_fft (" +
               std::to_string(o.n_fft) + ")");
  }
  const double nyquist = o.sample_rate / 2.0;
  const double f_max = o.f_max == 0.0 ? nyquist : o.f_max;
  if (!(o.f_min >= 0.0 && o.f_min < f_max && f_max <= nyquist)) {
    return bad("needs 0 <= f_min < f_max <= sample_rate / 2");
  }
  if (!(o.log_floor >= 1e-37 && o.log_floor <= 1e37)) {
    return bad("log_floor must be in [1e-37, 1e37] (a normal float32)");
  }
  return {};
}

using double4 = double __attribute__((vector_size(32)));

/// The bands of `power` through `filters` into `row` (float32): each band a fixed-length,
/// branch-free dot product, four bins at a time. Built for AVX2 (x86-64-v3) and for any x86-64,
/// the better picked when the library loads.
__attribute__((target_clones("arch=x86-64-v3", "default"))) void apply_filters(
    const padded_mel_filters& filters, const double* power, float* row) {
  const std::size_t width = filters.width;
  for (std::size_t m = 0; m < filters.size(); ++m) {
    const double* p = power + filters.first[m];
    const double* w = filters.weights.data() + m * width;
    double4 sum{};
    for (std::size_t k = 0; k < width; k += 4) {
      double4 pv;
      double4 wv;
      std::memcpy(&pv, p + k, sizeof pv);
      std::memcpy(&wv, w + k, sizeof wv);
      sum += pv * wv;
    }
    row[m] = static_cast<float>((sum[0] + sum[1]) + (sum[2] + sum[3]));
  }
}

/// ln(max(x, floor)) of the n values at `row`, in place (floor a normal float > 0). Built for
/// AVX2 (x86-64-v3) and for any x86-64, the better picked when the library loads.
__attribute__((target_clones("arch=x86-64-v3", "default"))) void take_log(float* row, std::size_t n,
                                                                          float floor) {
  bool finite = true;
  for (std::size_t i = 0; i < n; ++i) {
    finite = finite && row[i] <= std::numeric_limits<float>::max();
  }
  std::size_t i = 0;
  for (; finite && i + 8 <= n; i += 8) {
    float8 x;
    std::memcpy(&x, row + i, sizeof x);
    x = x < floor ? floor - x * 0.0F : x;
    log8(x);
    std::memcpy(row + i, &x, sizeof x);
  }
  for (; i < n; ++i) {  // the last few, or infinity (from samples of 1e19 and more): libm's
    row[i] = std::log(std::max(row[i], floor));
  }
}

}  // namespace

expected<mel_spectrogram> mel_spectrogram::make(const spectrogram_options& options) {
  if (auto ok = check(options); !ok) {
    return std::move(ok).error();
  }
  auto o = options;
  if (o.f_max == 0.0) {
    o.f_max = o.sample_rate / 2.0;
  }
  return mel_spectrogram(o, dali_hann(o.window),
                         slaney_mel_filters(o.sample_rate, o.n_fft, o.n_mels, o.f_min, o.f_max));
}

std::size_t mel_spectrogram::frames(std::size_t n) const noexcept {
  return n / static_cast<std::size_t>(options_.hop) + 1;
}

void mel_spectrogram::compute(const float* x, std::size_t n, float* out) const {
  auto& fft = thread_plan(options_.n_fft);
  double* in = fft.input();
  const fftw_complex* spectrum = fft.output();
  const auto n_fft = static_cast<std::size_t>(options_.n_fft);
  const auto window = static_cast<std::size_t>(options_.window);
  const auto size = static_cast<std::int64_t>(n);
  std::vector<double> power(n_fft / 2 + 1 + filters_.width, 0.0);  // room after: zeros
  const auto log_floor = static_cast<float>(options_.log_floor);
  for (std::size_t t = 0, frames_n = frames(n); t < frames_n; ++t) {
    // Frame t covers [t * hop - window / 2, t * hop + window / 2): centred on sample t * hop.
    const std::int64_t start =
        static_cast<std::int64_t>(t) * options_.hop - static_cast<std::int64_t>(window / 2);
    // In double: DALI windows in float32, which puts bins 80 dB down up to 1.5e-4 off
    // torchaudio's (a chirp near 8 kHz); in double they are within 1e-7 of it.
    if (start >= 0 && start + static_cast<std::int64_t>(window) <= size) {
      const float* frame = x + start;
      for (std::size_t i = 0; i < window; ++i) {
        in[i] = static_cast<double>(frame[i]) * static_cast<double>(window_[i]);
      }
    } else {
      for (std::size_t i = 0; i < window; ++i) {
        const float sample = x[reflect(start + static_cast<std::int64_t>(i), size)];
        in[i] = static_cast<double>(sample) * static_cast<double>(window_[i]);
      }
    }
    std::fill(in + window, in + n_fft, 0.0);
    fft.run();
    for (std::size_t k = 0; k < n_fft / 2 + 1; ++k) {
      power[k] = spectrum[k][0] * spectrum[k][0] + spectrum[k][1] * spectrum[k][1];
    }
    float* row = out + t * bands();
    apply_filters(filters_, power.data(), row);
    if (options_.log) {
      take_log(row, bands(), log_floor);
    }
  }
}

}  // namespace conveyor
