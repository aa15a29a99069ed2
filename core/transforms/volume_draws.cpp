#include "core/transforms/volume_draws.hpp"

namespace conveyor {

double rng_draws::random(std::string_view /*site*/) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
}

std::int64_t rng_draws::randrange(std::string_view /*site*/, std::int64_t n) {
  return std::uniform_int_distribution<std::int64_t>(0, n - 1)(rng_);
}

std::int64_t rng_draws::choice_index(std::string_view site, std::int64_t n) {
  return randrange(site, n);
}

double rng_draws::uniform(std::string_view site, double low, double high) {
  return low + (high - low) * random(site);
}

void rng_draws::standard_normals(std::string_view /*site*/, double* out, std::size_t n) {
  std::normal_distribution<double> normal(0.0, 1.0);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = normal(rng_);
  }
}

}  // namespace conveyor
