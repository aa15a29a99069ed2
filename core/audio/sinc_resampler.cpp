#include "core/audio/sinc_resampler.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

// The helpers below pass 32-byte vectors by value; they are always inlined into the cloned
// function that uses them, so no call ever has the AVX or the SSE calling convention.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace conveyor {
namespace {

constexpr int lobes = 16;               // DALI's lobes for its default quality 50
constexpr int coeffs = lobes * 64 + 1;  // table entries over [-lobes, lobes]
constexpr int taps = 2 * lobes + 1;     // inputs an output can reach: k in [-16, 16]
constexpr int padded_taps = 40;         // taps rounded up to a multiple of 8 (zeros)
static_assert(padded_taps >= taps && padded_taps % 8 == 0);
constexpr int phases = 33;                      // table offsets an output can start at
constexpr float table_center = coeffs / 2 + 1;  // 513: the table index of x = 0
constexpr float per_sample = 32.0F;             // table entries per input sample
constexpr int block = 1024;                     // outputs per position block, as DALI

/// The window, rearranged so that one output's taps are contiguous: for the table offset
/// r = floor(513 - 32 t) - 481 of an output at fractional position t, tap k's weight is
/// base[r][k + 16] + d * slope[r][k + 16], d the fraction of 513 - 32 t.
struct window_table {
  std::array<std::array<float, padded_taps>, phases> base{};
  std::array<std::array<float, padded_taps>, phases> slope{};

  window_table() {
    // DALI's windowed_sinc: coeffs samples of sinc(x) * Hann over x in [-lobes, lobes] in
    // float32 steps, Hann's argument scaled by 2 / coeffs; a zero entry on either side.
    std::array<float, coeffs + 2> lookup{};
    const float scale = 2.0F * lobes / static_cast<float>(coeffs - 1);
    const float scale_env = 2.0F / static_cast<float>(coeffs);
    const int center = coeffs / 2;
    for (int i = 0; i < coeffs; ++i) {
      const float x = static_cast<float>(i - center) * scale;
      const float y = static_cast<float>(i - center) * scale_env;
      const double hann = 0.5 * (1.0 + std::cos(static_cast<double>(y) * M_PI));
      const double px = M_PI * static_cast<double>(x);
      const double sinc = x == 0.0F ? 1.0 : std::sin(px) / px;
      lookup[static_cast<std::size_t>(i + 1)] = static_cast<float>(sinc * hann);
    }
    auto at = [&](int index) {
      return index >= 0 && index < coeffs + 2 ? lookup[static_cast<std::size_t>(index)] : 0.0F;
    };
    for (int r = 0; r < phases; ++r) {
      const int first = r + static_cast<int>(table_center) - 32;  // the offset's index at k = 0
      for (int k = -lobes; k <= lobes; ++k) {
        const int index = first + 32 * k;
        const auto slot = static_cast<std::size_t>(k + lobes);
        base[static_cast<std::size_t>(r)][slot] = at(index);
        slope[static_cast<std::size_t>(r)][slot] = at(index + 1) - at(index);
      }
    }
  }
};

const window_table& window() {
  static const window_table table;
  return table;
}

/// Eight floats: GCC's and Clang's vector extension, so that the dot product below runs eight
/// taps at a time (two halves of four on a CPU without AVX) without reordering a float sum the
/// compiler may not reorder itself.
using float8 = float __attribute__((vector_size(32)));

/// Where an output falls in the window table: the row of its fractional position and the
/// fraction d between that row's entries and the next (the table's linear interpolation).
struct window_phase {
  const float* base;
  const float* slope;
  float d;
};

/// `rounded`: as DALI 0.28's SSE2 loop indexes the table (the taps it takes four at a time):
/// the nearest entry (half to even) instead of the one below, extrapolating from it when the
/// position lies below it (a bug DALI fixed in 2022, #3745; ~1e-4 of the signal).
__attribute__((always_inline)) inline window_phase phase_of(const window_table& w, float t,
                                                            bool rounded) {
  const float g = table_center - per_sample * t;
  const float gi = std::floor(g);
  const int i = static_cast<int>(gi);
  const float d = g - gi;
  auto r = static_cast<std::size_t>(i - (static_cast<int>(table_center) - 32));
  if (rounded && (d > 0.5F || (d == 0.5F && i % 2 != 0))) {
    return {w.base[r + 1].data(), w.slope[r + 1].data(), d - 1.0F};
  }
  return {w.base[r].data(), w.slope[r].data(), d};
}

/// Sum over the padded taps of x[k] * (base[k] + d * slope[k]), eight lanes at a time, into
/// `sum`. (The helpers taking or giving eight floats do so by reference: clang refuses a
/// 32-byte vector passed by value into the clone built without AVX.)
__attribute__((always_inline)) inline void window_products(const float* x, const window_phase& p,
                                                           float8& sum) {
  sum = float8{};
  for (int k = 0; k < padded_taps; k += 8) {
    float8 xs;
    float8 bs;
    float8 ss;
    std::memcpy(&xs, x + k, sizeof xs);
    std::memcpy(&bs, p.base + k, sizeof bs);
    std::memcpy(&ss, p.slope + k, sizeof ss);
    sum += xs * (bs + p.d * ss);
  }
}

/// The lane sums of eight vectors, as one vector (lane i: the sum of a[i]'s lanes), by a tree
/// of shuffles and additions instead of eight separate horizontal sums, into `out`.
__attribute__((always_inline)) inline void lane_sums(const float8 (&a)[8], float8& out) {
  float8 pairs[4];
  for (int i = 0; i < 4; ++i) {
    pairs[i] = __builtin_shufflevector(a[2 * i], a[2 * i + 1], 0, 8, 2, 10, 4, 12, 6, 14) +
               __builtin_shufflevector(a[2 * i], a[2 * i + 1], 1, 9, 3, 11, 5, 13, 7, 15);
  }
  const float8 quads[2] = {
      __builtin_shufflevector(pairs[0], pairs[1], 0, 1, 8, 9, 4, 5, 12, 13) +
          __builtin_shufflevector(pairs[0], pairs[1], 2, 3, 10, 11, 6, 7, 14, 15),
      __builtin_shufflevector(pairs[2], pairs[3], 0, 1, 8, 9, 4, 5, 12, 13) +
          __builtin_shufflevector(pairs[2], pairs[3], 2, 3, 10, 11, 6, 7, 14, 15)};
  out = __builtin_shufflevector(quads[0], quads[1], 0, 1, 2, 3, 8, 9, 10, 11) +
        __builtin_shufflevector(quads[0], quads[1], 4, 5, 6, 7, 12, 13, 14, 15);
}

/// One output at integer input position `ib` plus fraction `t` (0 <= t < 1) near an end of
/// the signal: taps outside it are dropped, as DALI drops them. (Every helper of
/// resample_block is inlined into its clones: SSE code called from AVX code, or AVX code
/// returning without clearing the upper halves, slows every SSE instruction after it.)
__attribute__((always_inline)) inline float output_near_end(const window_table& w, const float* in,
                                                            std::int64_t n, std::int64_t ib,
                                                            float t) {
  const auto plain = phase_of(w, t, false);
  const auto rounded = phase_of(w, t, true);
  // DALI's taps: ceil(p) - 16 .. floor(p) + 16 within the signal, the first 4 x floor(count / 4)
  // of them through its SSE2 loop.
  const std::int64_t lo = std::max<std::int64_t>(t > 0.0F ? ib - lobes + 1 : ib - lobes, 0);
  const std::int64_t hi = std::min<std::int64_t>(ib + lobes, n - 1);
  const std::int64_t by_four = lo + (hi - lo + 1) / 4 * 4;
  float sum = 0.0F;
  for (std::int64_t i = lo; i <= hi; ++i) {
    const auto k = static_cast<std::size_t>(i - (ib - lobes));
    const auto& p = i < by_four ? rounded : plain;
    sum += in[i] * (p.base[k] + p.d * p.slope[k]);
  }
  return sum;
}

/// One output at input position ib + t, one at a time (near an end, or a block's last few).
__attribute__((always_inline)) inline float output_at(const window_table& w, const float* in,
                                                      std::int64_t n, std::int64_t ib, float t) {
  const std::int64_t first = ib - lobes;
  if (first < 0 || first + padded_taps > n) {
    return output_near_end(w, in, n, ib, t);
  }
  float8 sum;
  window_products(in + first, phase_of(w, t, true), sum);
  return ((sum[0] + sum[1]) + (sum[2] + sum[3])) + ((sum[4] + sum[5]) + (sum[6] + sum[7]));
}

/// The `count` (<= block) outputs of one block: the first at input position block_base + pos,
/// each next one float32 `step` further (DALI's positions, drift included). Eight outputs at a
/// time where all their taps lie in the signal. Built twice, for AVX2 with FMA (x86-64-v3) and
/// for any x86-64, the better picked when the library loads.
__attribute__((target_clones("arch=x86-64-v3", "default"))) void resample_block(
    const float* in, std::int64_t n, std::int64_t block_base, float pos, float step, float* out,
    std::size_t count) {
  const auto& w = window();
  std::array<std::int64_t, block> whole{};
  std::array<float, block> fraction{};
  for (std::size_t j = 0; j < count; ++j, pos += step) {
    const float f = std::floor(pos);
    whole[j] = block_base + static_cast<std::int64_t>(f);
    fraction[j] = pos - f;
  }
  std::size_t j = 0;
  for (; j + 8 <= count; j += 8) {
    if (whole[j] - lobes < 0 || whole[j + 7] - lobes + padded_taps > n) {
      for (std::size_t i = j; i < j + 8; ++i) {
        out[i] = output_at(w, in, n, whole[i], fraction[i]);
      }
      continue;
    }
    float8 products[8];
    for (std::size_t i = 0; i < 8; ++i) {
      window_products(in + whole[j + i] - lobes, phase_of(w, fraction[j + i], true), products[i]);
    }
    float8 sums;
    lane_sums(products, sums);
    std::memcpy(out + j, &sums, sizeof sums);
  }
  for (; j < count; ++j) {
    out[j] = output_at(w, in, n, whole[j], fraction[j]);
  }
}

}  // namespace

std::size_t resampled_length(std::size_t n, double in_rate, double out_rate) noexcept {
  return static_cast<std::size_t>(std::ceil(static_cast<double>(n) * out_rate / in_rate));
}

void sinc_resample(const float* in, std::size_t n, double in_rate, double out_rate, float* out) {
  const std::size_t n_out = resampled_length(n, in_rate, out_rate);
  const double scale = in_rate / out_rate;
  const auto fscale = static_cast<float>(scale);
  const auto size = static_cast<std::int64_t>(n);
  for (std::size_t out_block = 0; out_block < n_out; out_block += block) {
    const std::size_t block_end = std::min(out_block + block, n_out);
    const double block_start = static_cast<double>(out_block) * scale;
    const auto block_base = static_cast<std::int64_t>(std::floor(block_start));
    const auto pos = static_cast<float>(block_start - static_cast<double>(block_base));
    resample_block(in, size, block_base, pos, fscale, out + out_block, block_end - out_block);
  }
}

}  // namespace conveyor
