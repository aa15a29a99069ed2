#pragma once
/// The random draws of the steps that follow a reference recipe draw for draw: the volume steps
/// (MLPerf UNet3D: rand_balanced_crop, rand_flip, rand_brightness, gaussian_noise; sites as
/// docs/unet3d-reference.md section 2 names them: "crop.oversample", "flip0", ...) and the
/// speech steps (MLPerf RNN-T: speed_perturb, dither, spec_augment; sites as
/// docs/rnnt-reference.md section 4 names them: "speed", "dither", "specaug.time3.t0", ...),
/// one call per draw of the reference. The steps draw from rng_draws over their step's
/// generator; an exactness test gives a sample scripted draws instead
/// (sample_state::given_draws): the reference's own values, in the reference's order, which
/// the script checks site by site.

#include <cstddef>
#include <cstdint>
#include <random>
#include <string_view>

namespace conveyor {

/// Not synchronised: one sample's steps use it, one at a time.
class step_draws {
 public:
  virtual ~step_draws() = default;
  /// Python's random.random(): a double in [0, 1).
  virtual double random(std::string_view site) = 0;
  /// Python's random.randrange(n), n >= 1: an integer in [0, n) (and torch.randint(0, n)).
  virtual std::int64_t randrange(std::string_view site, std::int64_t n) = 0;
  /// torch.randint(low, high): an integer in [low, high), low < high.
  virtual std::int64_t randint(std::string_view site, std::int64_t low, std::int64_t high) = 0;
  /// The index np.random.choice(a) picks in an array of n >= 1 elements: [0, n).
  virtual std::int64_t choice_index(std::string_view site, std::int64_t n) = 0;
  /// np.random.uniform(low, high): a double in [low, high) (and DALI's float32 Uniform).
  virtual double uniform(std::string_view site, double low, double high) = 0;
  /// The next `n` standard normals of the array drawn at `site` (np.random.normal's z, in C
  /// order; DALI's NormalDistribution): one draw of a whole array, taken in pieces by
  /// successive calls.
  virtual void standard_normals(std::string_view site, double* out, std::size_t n) = 0;
};

/// The draws from a step's generator, with the reference's distributions (uniform [0, 1),
/// uniform integers, low + (high - low) * u, standard normals).
class rng_draws final : public step_draws {
 public:
  explicit rng_draws(std::mt19937_64& rng) : rng_(rng) {}
  double random(std::string_view site) override;
  std::int64_t randrange(std::string_view site, std::int64_t n) override;
  std::int64_t randint(std::string_view site, std::int64_t low, std::int64_t high) override;
  std::int64_t choice_index(std::string_view site, std::int64_t n) override;
  double uniform(std::string_view site, double low, double high) override;
  void standard_normals(std::string_view site, double* out, std::size_t n) override;

 private:
  std::mt19937_64& rng_;
};

}  // namespace conveyor
