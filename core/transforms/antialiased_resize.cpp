#include "core/transforms/antialiased_resize.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <opencv2/core.hpp>

namespace conveyor {
namespace {

// PIL's 8-bit path: weights in fixed point with 22 fractional bits (32 - 8 - 2: a sum of
// 8-bit pixels times weights up to ~1 cannot overflow 32 bits).
constexpr int precision_bits = 32 - 8 - 2;
constexpr std::int32_t half = std::int32_t{1} << (precision_bits - 1);

double box_filter(double x) {
  return x > -0.5 && x <= 0.5 ? 1.0 : 0.0;
}

double triangle_filter(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

double cubic_filter(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) {
    return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  }
  if (x < 2.0) {
    return (((x - 5) * x + 8) * x - 4) * a;
  }
  return 0.0;
}

struct filter_shape {
  double (*weight)(double);
  double support;
};

filter_shape shape_of(resample_filter f) {
  switch (f) {
    case resample_filter::box:
      return {box_filter, 0.5};
    case resample_filter::bicubic:
      return {cubic_filter, 2.0};
    case resample_filter::bilinear:
    case resample_filter::nearest:
      break;
  }
  return {triangle_filter, 1.0};
}

// For each output position along one axis: the first source index, how many follow, and
// their fixed-point weights (ksize a position, zero past `count`).
struct axis_weights {
  int ksize = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<std::int32_t> weights;
};

// PIL's precompute_coeffs and normalize_coeffs_8bpc for `in_size` source pixels, the region
// [in0, in1) of them, and `out_size` outputs.
axis_weights weights_for(int in_size, double in0, double in1, int out_size, filter_shape shape) {
  const double scale = (in1 - in0) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = shape.support * filterscale;
  axis_weights w;
  w.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  w.first.resize(static_cast<std::size_t>(out_size));
  w.count.resize(static_cast<std::size_t>(out_size));
  w.weights.assign(static_cast<std::size_t>(out_size) * static_cast<std::size_t>(w.ksize), 0);
  std::vector<double> k(static_cast<std::size_t>(w.ksize));
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    double total = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[static_cast<std::size_t>(x)] = shape.weight((x + xmin - center + 0.5) / filterscale);
      total += k[static_cast<std::size_t>(x)];
    }
    auto* out = &w.weights[static_cast<std::size_t>(xx) * static_cast<std::size_t>(w.ksize)];
    for (int x = 0; x < xmax; ++x) {
      double v =
          total != 0.0 ? k[static_cast<std::size_t>(x)] / total : k[static_cast<std::size_t>(x)];
      out[x] = static_cast<std::int32_t>(v < 0 ? -0.5 + v * (1 << precision_bits)
                                               : 0.5 + v * (1 << precision_bits));
    }
    w.first[static_cast<std::size_t>(xx)] = xmin;
    w.count[static_cast<std::size_t>(xx)] = std::max(xmax, 0);
  }
  return w;
}

// out[i] = the fixed-point sum over the taps of weight[t] * row[t][i], rounded and clipped to
// 8 bits: one output row from whole input rows, each with one weight along it, so the loop over
// i vectorises and keeps the sums in registers.
template <int Taps>
void combine(std::uint8_t* __restrict out, const std::uint8_t* const* __restrict row,
             const std::int32_t* __restrict weight, int n) {
  for (int i = 0; i < n; ++i) {
    std::int32_t sum = half;
    for (int t = 0; t < Taps; ++t) {
      sum += row[t][i] * weight[t];
    }
    sum >>= precision_bits;
    out[i] = static_cast<std::uint8_t>(sum < 0 ? 0 : sum > 255 ? 255 : sum);
  }
}

#if defined(__x86_64__) || defined(__i386__)
// The same with AVX2, two taps at a time through 16-bit multiply-adds, and exactly the same
// result: a 22-bit weight w splits into hi * 2048 + lo (lo in [0, 2048), hi in [-2048, 2048)),
// each a 16-bit factor; sum(p * w) = (sum(p * hi) << 11) + sum(p * lo), and no partial sum
// leaves 32 bits (|sum(p * w)| <= 255 * sum(|w|) < 2^31). 1.8x the 32-bit multiplies.
__attribute__((target("avx2"))) __m256i pair_weights(std::int32_t a, std::int32_t b, int part) {
  auto piece = [part](std::int32_t w) {
    return static_cast<std::uint32_t>(
        static_cast<std::uint16_t>(part == 0 ? (w >> 11) : (w & 2047)));
  };
  return _mm256_set1_epi32(static_cast<std::int32_t>(piece(a) | (piece(b) << 16U)));
}

template <int Taps>
__attribute__((target("avx2"))) void combine_avx2(std::uint8_t* __restrict out,
                                                  const std::uint8_t* const* __restrict row,
                                                  const std::int32_t* __restrict weight, int n) {
  constexpr int pairs = (Taps + 1) / 2;
  __m256i hi[pairs];
  __m256i lo[pairs];
  for (int p = 0; p < pairs; ++p) {
    const std::int32_t second = 2 * p + 1 < Taps ? weight[2 * p + 1] : 0;
    hi[p] = pair_weights(weight[2 * p], second, 0);
    lo[p] = pair_weights(weight[2 * p], second, 1);
  }
  const __m256i zero = _mm256_setzero_si256();
  const __m256i rounding = _mm256_set1_epi32(half);
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i h0 = zero, h1 = zero, l0 = zero, l1 = zero;
    for (int p = 0; p < pairs; ++p) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[2 * p] + i));
      const __m128i b = 2 * p + 1 < Taps
                            ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[2 * p + 1] + i))
                            : _mm_setzero_si128();
      // (a_j, b_j) byte pairs, then 16-bit: x0 holds j = 0-3 | 8-11, x1 j = 4-7 | 12-15.
      const __m256i x = _mm256_set_m128i(_mm_unpackhi_epi8(a, b), _mm_unpacklo_epi8(a, b));
      const __m256i x0 = _mm256_unpacklo_epi8(x, zero);
      const __m256i x1 = _mm256_unpackhi_epi8(x, zero);
      h0 = _mm256_add_epi32(h0, _mm256_madd_epi16(x0, hi[p]));
      h1 = _mm256_add_epi32(h1, _mm256_madd_epi16(x1, hi[p]));
      l0 = _mm256_add_epi32(l0, _mm256_madd_epi16(x0, lo[p]));
      l1 = _mm256_add_epi32(l1, _mm256_madd_epi16(x1, lo[p]));
    }
    __m256i s0 = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h0, 11), l0), rounding);
    __m256i s1 = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h1, 11), l1), rounding);
    s0 = _mm256_srai_epi32(s0, precision_bits);
    s1 = _mm256_srai_epi32(s1, precision_bits);
    const __m256i words = _mm256_packs_epi32(s0, s1);  // j = 0-7 | 8-15, saturated
    _mm_storeu_si128(
        reinterpret_cast<__m128i*>(out + i),
        _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1)));
  }
  const std::uint8_t* tail[Taps];  // the last n % 16 elements
  for (int t = 0; t < Taps; ++t) {
    tail[t] = row[t] + i;
  }
  combine<Taps>(out + i, tail, weight, n - i);
}

template <int Taps>
struct avx2_kernel {
  static constexpr void (*run)(std::uint8_t*, const std::uint8_t* const*, const std::int32_t*,
                               int) = combine_avx2<Taps>;
};
#endif

// The same for any number of taps (a large downscale): through 32-bit sums in memory.
void combine_many(std::uint8_t* out, const std::uint8_t* const* row, const std::int32_t* weight,
                  int taps, int n) {
  thread_local std::vector<std::int32_t> acc;
  acc.assign(static_cast<std::size_t>(n), half);
  for (int t = 0; t < taps; ++t) {
    const std::uint8_t* r = row[t];
    for (int i = 0; i < n; ++i) {
      acc[static_cast<std::size_t>(i)] += r[i] * weight[t];
    }
  }
  for (int i = 0; i < n; ++i) {
    std::int32_t sum = acc[static_cast<std::size_t>(i)] >> precision_bits;
    out[i] = static_cast<std::uint8_t>(sum < 0 ? 0 : sum > 255 ? 255 : sum);
  }
}

using combiner = void (*)(std::uint8_t*, const std::uint8_t* const*, const std::int32_t*, int);
constexpr int max_combined_taps = 12;  // bicubic up to a 2.75x reduction, bilinear 5.5x

template <template <int> class Kernel, int... Taps>
constexpr std::array<combiner, sizeof...(Taps)> table(std::integer_sequence<int, Taps...>) {
  return {Kernel<Taps + 1>::run...};
}

template <int Taps>
struct portable_kernel {
  static constexpr combiner run = combine<Taps>;
};

// combine<1..12>, with AVX2 where the CPU has it.
const combiner* combiners() {
  static constexpr auto portable =
      table<portable_kernel>(std::make_integer_sequence<int, max_combined_taps>{});
#if defined(__x86_64__) || defined(__i386__)
  static constexpr auto avx2 =
      table<avx2_kernel>(std::make_integer_sequence<int, max_combined_taps>{});
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  return has_avx2 ? avx2.data() : portable.data();
#else
  return portable.data();
#endif
}

// Row yy of `dst` = the weighted rows of `src` that `w` gives for it, for every yy: a pass along
// the rows' axis, each output row a weighted sum of whole input rows.
void pass_across_rows(const cv::Mat& src, const axis_weights& w, cv::Mat& dst) {
  const int out_rows = static_cast<int>(w.first.size());
  const int width = dst.cols * dst.channels();
  std::vector<const std::uint8_t*> rows(static_cast<std::size_t>(w.ksize));
  const combiner* combine = combiners();
  for (int yy = 0; yy < out_rows; ++yy) {
    const auto* k = &w.weights[static_cast<std::size_t>(yy) * static_cast<std::size_t>(w.ksize)];
    const int first = w.first[static_cast<std::size_t>(yy)];
    const int taps = w.count[static_cast<std::size_t>(yy)];
    for (int t = 0; t < taps; ++t) {
      rows[static_cast<std::size_t>(t)] = src.ptr<std::uint8_t>(first + t);
    }
    auto* out = dst.ptr<std::uint8_t>(yy);
    if (taps >= 1 && taps <= max_combined_taps) {
      combine[taps - 1](out, rows.data(), k, width);
    } else {
      combine_many(out, rows.data(), k, taps, width);
    }
  }
}

// A buffer that only grows: an image of another size each sample would otherwise be a fresh
// allocation, and past glibc's mmap threshold (128 KiB) each one faults its pages in anew.
class scratch {
 public:
  cv::Mat of(int rows, int cols, int type) {
    const auto bytes = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) *
                       static_cast<std::size_t>(CV_ELEM_SIZE(type));
    if (store_.size() < bytes) {
      store_.resize(bytes);
    }
    return {rows, cols, type, store_.data()};
  }

 private:
  std::vector<std::uint8_t> store_;
};

// PIL's order, horizontal pass first (each output pixel rounded to 8 bits in between), then
// vertical. The horizontal pass runs across the rows of the transposed image, where whole rows
// share one weight, as the vertical pass does: 5-10x faster than a pass along each row.
void resample_region(const cv::Mat& src, const source_region& r, cv::Size out, filter_shape shape,
                     cv::Mat& dst) {
  auto wx = weights_for(src.cols, r.left, r.right, out.width, shape);
  auto wy = weights_for(src.rows, r.top, r.bottom, out.height, shape);
  // Only the rows and columns the passes read.
  const int row0 = wy.first.front();
  const int rows = wy.first.back() + wy.count.back() - row0;
  const int col0 = wx.first.front();
  const int cols = wx.first.back() + wx.count.back() - col0;
  for (auto& f : wy.first) {
    f -= row0;
  }
  for (auto& f : wx.first) {
    f -= col0;
  }
  const int type = src.type();
  thread_local scratch columns;  // the region transposed: a row per source column
  thread_local scratch across;   // the horizontal pass, transposed: a row per output column
  thread_local scratch narrowed;
  cv::Mat c = columns.of(cols, rows, type);
  cv::transpose(src(cv::Rect(col0, row0, cols, rows)), c);
  cv::Mat a = across.of(out.width, rows, type);
  pass_across_rows(c, wx, a);
  cv::Mat n = narrowed.of(rows, out.width, type);
  cv::transpose(a, n);
  dst.create(out, type);
  pass_across_rows(n, wy, dst);
}

// PIL's NEAREST: the pixel under each output pixel's centre.
void nearest(const cv::Mat& src, const source_region& r, cv::Size out, cv::Mat& dst) {
  dst.create(out, src.type());
  const auto pixel = src.elemSize();
  const double sx = (r.right - r.left) / out.width;
  const double sy = (r.bottom - r.top) / out.height;
  std::vector<int> xs(static_cast<std::size_t>(out.width));
  for (int x = 0; x < out.width; ++x) {
    xs[static_cast<std::size_t>(x)] =
        std::clamp(static_cast<int>(std::floor(r.left + (x + 0.5) * sx)), 0, src.cols - 1);
  }
  for (int y = 0; y < out.height; ++y) {
    int sy_row = std::clamp(static_cast<int>(std::floor(r.top + (y + 0.5) * sy)), 0, src.rows - 1);
    const auto* in = src.ptr<std::uint8_t>(sy_row);
    auto* o = dst.ptr<std::uint8_t>(y);
    for (int x = 0; x < out.width; ++x) {
      std::copy_n(in + static_cast<std::size_t>(xs[static_cast<std::size_t>(x)]) * pixel, pixel,
                  o + static_cast<std::size_t>(x) * pixel);
    }
  }
}

}  // namespace

void antialiased_resize(const cv::Mat& src, const source_region& region, cv::Size out,
                        resample_filter filter, cv::Mat& dst) {
  if (filter == resample_filter::nearest) {
    nearest(src, region, out, dst);
    return;
  }
  resample_region(src, region, out, shape_of(filter), dst);
}

}  // namespace conveyor
