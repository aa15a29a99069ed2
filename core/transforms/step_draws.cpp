#include "core/transforms/step_draws.hpp"

#include <array>
#include <cmath>

namespace conveyor {
namespace {

/// Marsaglia and Tsang's ziggurat for the standard normal ("The Ziggurat Method for Generating
/// Random Variables", J. Stat. Software 5(8), 2000), 128 layers, from 32 random bits a normal:
/// a 25-bit signed magnitude and, from the other 7 bits, the layer (the original reuses the
/// magnitude's low bits for it, which correlates them). 24 bits of magnitude resolve a layer
/// finer than float32 resolves the normal; one 64-bit draw gives two normals.
struct ziggurat_tables {
  std::array<std::uint32_t, 128> k{};
  std::array<double, 128> w{};
  std::array<double, 128> f{};
  ziggurat_tables() {
    constexpr double m1 = 16777216.0;  // 2^24
    constexpr double vn = 9.91256303526217e-3;
    double dn = 3.442619855899;
    double tn = dn;
    const double q = vn / std::exp(-0.5 * dn * dn);
    k[0] = static_cast<std::uint32_t>((dn / q) * m1);
    k[1] = 0;
    w[0] = q / m1;
    w[127] = dn / m1;
    f[0] = 1.0;
    f[127] = std::exp(-0.5 * dn * dn);
    for (int i = 126; i >= 1; --i) {
      dn = std::sqrt(-2.0 * std::log(vn / dn + std::exp(-0.5 * dn * dn)));
      k[static_cast<std::size_t>(i + 1)] = static_cast<std::uint32_t>((dn / tn) * m1);
      tn = dn;
      f[static_cast<std::size_t>(i)] = std::exp(-0.5 * dn * dn);
      w[static_cast<std::size_t>(i)] = dn / m1;
    }
  }
};

const ziggurat_tables& tables() {
  static const ziggurat_tables t;
  return t;
}

/// xoshiro256** (Blackman and Vigna, 2018), seeded by splitmix64: ~1 ns a draw, every bit
/// good, where mt19937_64 takes ~4. Bulk normals (a volume's noise, an utterance's dither) come
/// from one seeded from the step's generator.
class xoshiro256 {
 public:
  explicit xoshiro256(std::uint64_t seed) {
    for (auto& word : s_) {
      seed += 0x9E3779B97F4A7C15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
      word = z ^ (z >> 31U);
    }
  }
  std::uint64_t operator()() noexcept {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17U;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept {
    return (x << static_cast<unsigned>(k)) | (x >> static_cast<unsigned>(64 - k));
  }
  std::array<std::uint64_t, 4> s_{};
};

template <class Generator>
double uniform_open(Generator& rng) {  // (0, 1)
  return (static_cast<double>(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/// A standard normal from 32 random `bits` when they fall in their layer's rectangle (~99% of
/// them): true and `out` set. Inline, so that the common case costs a few instructions.
inline bool ziggurat_rectangle(std::uint32_t bits, double& out) {
  const auto& t = tables();
  const auto hz = static_cast<std::int32_t>(bits << 7U) >> 7;  // 25 bits, sign extended
  const auto iz = static_cast<std::size_t>(bits >> 25U);       // 7 bits: the layer
  const auto magnitude = static_cast<std::uint32_t>(hz < 0 ? -hz : hz);
  out = hz * t.w[iz];
  return magnitude < t.k[iz];
}

/// The rest of the ziggurat, for `bits` its rectangle rejected: the tail beyond the base layer
/// or the layer's wedge, then new draws from `rng` until one is taken.
template <class Generator>
__attribute__((noinline)) double ziggurat_normal(std::uint32_t bits, Generator& rng) {
  constexpr double r = 3.442619855899;  // where the tail begins
  const auto& t = tables();
  for (;; bits = static_cast<std::uint32_t>(rng())) {
    double x = 0;
    if (ziggurat_rectangle(bits, x)) {
      return x;
    }
    const auto hz = static_cast<std::int32_t>(bits << 7U) >> 7;
    const auto iz = static_cast<std::size_t>(bits >> 25U);
    if (iz == 0) {  // the tail beyond r
      double tx = 0, ty = 0;
      do {
        tx = -std::log(uniform_open(rng)) / r;
        ty = -std::log(uniform_open(rng));
      } while (ty + ty < tx * tx);
      return hz > 0 ? r + tx : -r - tx;
    }
    if (t.f[iz] + uniform_open(rng) * (t.f[iz - 1] - t.f[iz]) < std::exp(-0.5 * x * x)) {
      return x;  // under the curve in the layer's wedge
    }
  }
}

/// A standard normal from 32 random bits (more from `rng` when they are rejected).
template <class Generator>
inline double standard_normal(std::uint32_t bits, Generator& rng) {
  double x = 0;
  return ziggurat_rectangle(bits, x) ? x : ziggurat_normal(bits, rng);
}

}  // namespace

double rng_draws::random(std::string_view /*site*/) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
}

std::int64_t rng_draws::randrange(std::string_view /*site*/, std::int64_t n) {
  return std::uniform_int_distribution<std::int64_t>(0, n - 1)(rng_);
}

std::int64_t rng_draws::randint(std::string_view site, std::int64_t low, std::int64_t high) {
  return low + randrange(site, high - low);
}

std::int64_t rng_draws::choice_index(std::string_view site, std::int64_t n) {
  return randrange(site, n);
}

double rng_draws::uniform(std::string_view site, double low, double high) {
  return low + (high - low) * random(site);
}

void rng_draws::standard_normals(std::string_view /*site*/, double* out, std::size_t n) {
  // A noise sample draws 2M normals: the ziggurat over xoshiro256**, two normals a draw, takes
  // ~2 ns a normal where std::normal_distribution's polar method (log, sqrt, a rejection
  // loop) takes ~30.
  xoshiro256 fast(rng_());
  std::size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const std::uint64_t bits = fast();
    out[i] = standard_normal(static_cast<std::uint32_t>(bits), fast);
    out[i + 1] = standard_normal(static_cast<std::uint32_t>(bits >> 32U), fast);
  }
  if (i < n) {
    out[i] = standard_normal(static_cast<std::uint32_t>(fast()), fast);
  }
}

}  // namespace conveyor
