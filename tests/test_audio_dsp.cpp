// Speech signal processing (core/audio): DALI's windowed-sinc resampler, libsoxr resampling,
// silence detection, Slaney mel filters and mel spectrograms, on signals whose answers are
// known. (tests/python/test_rnnt_exact.py holds them against the MLPerf reference and
// torchaudio.)
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/audio/mel_filters.hpp"
#include "core/audio/mel_spectrogram.hpp"
#include "core/audio/nonsilent_region.hpp"
#include "core/audio/sinc_resampler.hpp"
#include "core/audio/soxr_resampler.hpp"

namespace conveyor {
namespace {

std::vector<float> tone(std::size_t n, double hz, double rate, double amplitude = 0.5) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(amplitude * std::cos(2 * M_PI * hz * static_cast<double>(i) / rate));
  }
  return x;
}

// The largest |got - the tone at the output's rate| over outputs [from, to), relative to the
// amplitude.
double tone_error(const std::vector<float>& got, double hz, double rate, std::size_t from,
                  std::size_t to, double amplitude = 0.5) {
  double worst = 0;
  for (std::size_t j = from; j < to; ++j) {
    const double want = amplitude * std::cos(2 * M_PI * hz * static_cast<double>(j) / rate);
    worst = std::max(worst, std::abs(got[j] - want) / amplitude);
  }
  return worst;
}

TEST(SincResampler, LengthIsCeilOfTheRatio) {
  EXPECT_EQ(resampled_length(16000, 16000, 13600), 13600u);
  const float rate = 1.15F * 16000.0F;  // the recipe's float32 rate
  EXPECT_EQ(resampled_length(267200, 16000, rate),
            static_cast<std::size_t>(std::ceil(267200.0 * rate / 16000.0)));
  EXPECT_EQ(resampled_length(0, 16000, 18000), 0u);
}

// Where DALI's resampler places output j in the input: per block of 1024 outputs the block's
// start in double, then float32 steps (the drift is the reference's own).
std::vector<double> dali_positions(std::size_t n, double in_rate, double out_rate) {
  std::vector<double> out;
  const double scale = in_rate / out_rate;
  for (std::size_t block = 0; block < n; block += 1024) {
    const double start = static_cast<double>(block) * scale;
    const double whole = std::floor(start);
    auto pos = static_cast<float>(start - whole);
    for (std::size_t j = block; j < std::min(n, block + 1024); ++j) {
      out.push_back(whole + pos);
      pos += static_cast<float>(scale);
    }
  }
  return out;
}

TEST(SincResampler, ATonePassesAtItsNewRate) {
  // Speed 1.15 (16 kHz -> 18.4 kHz, then read as 16 kHz) and 0.85, a 3 kHz tone: each output
  // is the tone at its position, within 2e-3 (the window table) away from the ends.
  const auto x = tone(16000, 3000, 16000);
  for (double out_rate : {18400.0, 13600.0}) {
    std::vector<float> y(resampled_length(x.size(), 16000, out_rate));
    sinc_resample(x.data(), x.size(), 16000, out_rate, y.data());
    const auto at = dali_positions(y.size(), 16000, out_rate);
    double worst = 0;
    for (std::size_t j = 64; j + 64 < y.size(); ++j) {
      worst = std::max(worst, std::abs(y[j] - 0.5 * std::cos(2 * M_PI * 3000 * at[j] / 16000)));
    }
    EXPECT_LT(worst / 0.5, 2e-3) << out_rate;
  }
}

TEST(SincResampler, AtTheSameRateItIsTheIdentity) {
  const auto x = tone(4000, 440, 16000);
  std::vector<float> y(x.size());
  sinc_resample(x.data(), x.size(), 16000, 16000, y.data());
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_NEAR(y[i], x[i], 1e-6) << i;  // sinc is 0 at every other integer
  }
}

TEST(SoxrResampler, ATonePassesAtTheNewRateAlignedWithTheInput) {
  const auto x = tone(22050, 1000, 22050);
  auto y = soxr_resample(x.data(), x.size(), 1, 22050, 16000);
  ASSERT_TRUE(y) << y.error().what();
  EXPECT_EQ(y->size(), resampled_length(x.size(), 22050, 16000));
  EXPECT_LT(tone_error(*y, 1000, 16000, 400, y->size() - 400), 1e-3);
  // Two channels, interleaved: each its own tone.
  std::vector<float> stereo;
  const auto low = tone(8000, 500, 16000);
  const auto high = tone(8000, 2000, 16000, 0.25);
  for (std::size_t i = 0; i < low.size(); ++i) {
    stereo.push_back(low[i]);
    stereo.push_back(high[i]);
  }
  auto z = soxr_resample(stereo.data(), low.size(), 2, 16000, 24000);
  ASSERT_TRUE(z);
  ASSERT_EQ(z->size(), 2 * resampled_length(low.size(), 16000, 24000));
  std::vector<float> left, right;
  for (std::size_t i = 0; i < z->size(); i += 2) {
    left.push_back((*z)[i]);
    right.push_back((*z)[i + 1]);
  }
  EXPECT_LT(tone_error(left, 500, 24000, 400, left.size() - 400), 1e-3);
  EXPECT_LT(tone_error(right, 2000, 24000, 400, right.size() - 400, 0.25), 1e-3);
}

TEST(NonsilentRegion, FromTheFirstLoudWindowToTheEndOfTheLast) {
  std::vector<float> x(16000, 0.0F);
  const auto t = tone(8000, 500, 16000);
  std::copy(t.begin(), t.end(), x.begin() + 4000);  // sound at [4000, 12000)
  const auto r = nonsilent_region(x.data(), x.size());
  // The first 2048-sample window that reaches sample 4000 starts at 1953; the last that still
  // holds sample 11999 starts there and ends at 14047.
  EXPECT_EQ(r.begin, 1953u);
  EXPECT_EQ(r.length, 14047u - 1953u);
  // -60 dB: a hum 70 dB down is silence, one 50 dB down is sound.
  std::vector<float> hum(x);
  for (std::size_t i = 0; i < hum.size(); ++i) {
    hum[i] += static_cast<float>(0.5 * std::pow(10.0, -70.0 / 20.0) * std::cos(0.3 * i));
  }
  EXPECT_EQ(nonsilent_region(hum.data(), hum.size()).begin, 1953u);
  for (std::size_t i = 0; i < hum.size(); ++i) {
    hum[i] = x[i] + static_cast<float>(0.5 * std::pow(10.0, -50.0 / 20.0) * std::cos(0.3 * i));
  }
  EXPECT_EQ(nonsilent_region(hum.data(), hum.size()).begin, 0u);
  EXPECT_EQ(nonsilent_region(hum.data(), hum.size()).length, hum.size());
}

TEST(NonsilentRegion, ShortAndEmptySignals) {
  EXPECT_EQ(nonsilent_region(nullptr, 0).length, 0u);
  const auto t = tone(100, 500, 16000);  // shorter than a window: one window of it all
  const auto r = nonsilent_region(t.data(), t.size());
  EXPECT_EQ(r.begin, 0u);
  EXPECT_EQ(r.length, 100u);
}

TEST(MelFilters, SlaneyTrianglesOfUnitArea) {
  const auto fb = slaney_mel_filters(16000, 512, 80, 0.0, 8000.0);
  ASSERT_EQ(fb.size(), 80u);
  // Each triangle's area, sampled at the FFT's bins: about 1 (unnormalised triangles would
  // have areas of half their widths, 20 to 500 Hz); the wide ones closely.
  const double bin_hz = 16000.0 / 512.0;
  double sum = 0;
  for (std::size_t m = 40; m < fb.size(); ++m) {
    double area = 0;
    for (float w : fb.weights[m]) {
      area += w * bin_hz;
    }
    EXPECT_NEAR(area, 1.0, 0.15) << "band " << m;
    sum += area;
  }
  EXPECT_NEAR(sum / 40, 1.0, 0.02);
  for (std::size_t m = 1; m < fb.size(); ++m) {
    EXPECT_GE(fb.first[m], fb.first[m - 1]);  // bands climb
  }
}

TEST(MelSpectrogram, AToneLightsTheBandAroundIt) {
  auto mel = mel_spectrogram::make({});
  ASSERT_TRUE(mel) << mel.error().what();
  const auto x = tone(16000, 1000, 16000);
  ASSERT_EQ(mel->frames(x.size()), 101u);
  std::vector<float> out(mel->frames(x.size()) * mel->bands());
  mel->compute(x.data(), x.size(), out.data());
  // The middle frame: the loudest band is centred on 1 kHz, 15 on the Slaney mel scale.
  const float* row = out.data() + 50 * mel->bands();
  const auto loudest = static_cast<std::size_t>(std::max_element(row, row + 80) - row);
  const double mel_top = 15.0 + std::log(8.0) / (std::log(6.4) / 27.0);
  const double centre_mel = mel_top * static_cast<double>(loudest + 1) / 81.0;
  EXPECT_NEAR(centre_mel, 15.0, mel_top / 81.0);
  // Silence is the log floor, ln(1e-20).
  std::vector<float> quiet(3200, 0.0F);
  std::vector<float> floor(mel->frames(quiet.size()) * mel->bands());
  mel->compute(quiet.data(), quiet.size(), floor.data());
  for (float v : floor) {
    ASSERT_FLOAT_EQ(v, std::log(1e-20F));
  }
}

TEST(MelSpectrogram, OptionsOutOfRangeAreNamed) {
  spectrogram_options o;
  o.window = 1024;
  auto bad = mel_spectrogram::make(o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), "mel spectrogram: window (1024) must be <= n_fft (512)");
  o = {};
  o.f_max = 9000;
  EXPECT_FALSE(mel_spectrogram::make(o));
}

}  // namespace
}  // namespace conveyor
