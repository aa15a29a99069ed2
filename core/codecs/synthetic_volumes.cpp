#include "core/codecs/synthetic_volumes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/base/sample_seed.hpp"
#include "core/codecs/npy_writer.hpp"

namespace conveyor {
namespace {

namespace fs = std::filesystem;

// CT numbers (HU) and the reference's preprocessing (preprocess_dataset.py).
constexpr float air_hu = -1000.f, tissue_hu = 40.f, kidney_hu = 180.f, tumour_hu = 100.f;
constexpr float clip_low = -79.f, clip_high = 304.f, mean_hu = 101.f, std_hu = 76.9f;

/// A bean-shaped kidney: an ellipsoid bent along x with depth, and a tumour sphere inside.
struct kidney {
  std::array<float, 3> centre{};  ///< z, y, x
  std::array<float, 3> radius{};
  float bend = 0;                 ///< x offset at the poles, in voxels
  std::array<float, 3> tumour{};  ///< its centre
  float tumour_radius = 0;
};

struct case_plan {
  std::array<std::int64_t, 3> shape{};
  std::vector<kidney> kidneys;
  std::array<float, 6> wave{};  ///< phases and frequencies of the smooth variation
  std::uint64_t noise_seed = 0;
};

std::mt19937_64 case_rng(const synthetic_volume_options& o, std::uint64_t index) {
  return std::mt19937_64(sample_seed(o.seed, index));
}

float uniform(std::mt19937_64& rng, float lo, float hi) {
  return std::uniform_real_distribution<float>(lo, hi)(rng);
}

kidney plan_kidney(std::mt19937_64& rng, const std::array<std::int64_t, 3>& shape, float side_x) {
  const auto d = static_cast<float>(shape[0]), h = static_cast<float>(shape[1]),
             w = static_cast<float>(shape[2]);
  const float s = std::min(h, w);
  kidney k;
  k.radius = {std::min(uniform(rng, 0.12f, 0.18f) * std::min(d, 2 * s), d / 2 - 2),
              uniform(rng, 0.09f, 0.13f) * s, uniform(rng, 0.07f, 0.10f) * s};
  k.bend = uniform(rng, 0.1f, 0.3f) * k.radius[2];
  k.centre = {uniform(rng, k.radius[0] + 1, d - k.radius[0] - 1), h * uniform(rng, 0.52f, 0.6f),
              w / 2 + side_x * w * uniform(rng, 0.22f, 0.26f)};
  k.tumour_radius = std::max(
      1.5f, uniform(rng, 0.2f, 0.4f) * *std::min_element(k.radius.begin(), k.radius.end()));
  for (std::size_t a = 0; a < 3; ++a) {  // inside: at most 0.35 of the way to the surface
    k.tumour[a] = k.centre[a] + uniform(rng, -0.35f, 0.35f) * (k.radius[a] - k.tumour_radius);
  }
  const float rz = (k.tumour[0] - k.centre[0]) / k.radius[0];
  k.tumour[2] += k.bend * rz * rz;  // where the bent kidney is at the tumour's depth
  return k;
}

/// Case extents {D, H, W}, drawn first from the case's generator.
std::array<std::int64_t, 3> draw_shape(const synthetic_volume_options& o, std::mt19937_64& rng) {
  const float u = uniform(rng, 1e-6f, 1.f);
  const auto depth = std::min<double>(o.max_depth, o.min_extent * std::pow(u, -1.0 / 2.2));
  const float side = uniform(rng, static_cast<float>(o.min_extent), static_cast<float>(o.max_side));
  const float aspect = uniform(rng, 0.85f, 1.f);
  return {static_cast<std::int64_t>(depth),
          std::max<std::int64_t>(o.min_extent, static_cast<std::int64_t>(side * aspect)),
          static_cast<std::int64_t>(side)};
}

case_plan plan_case(const synthetic_volume_options& o, std::uint64_t index) {
  auto rng = case_rng(o, index);
  case_plan p;
  p.shape = draw_shape(o, rng);
  const bool both = uniform(rng, 0.f, 1.f) < 0.7f;
  const float first_side = uniform(rng, 0.f, 1.f) < 0.5f ? -1.f : 1.f;
  p.kidneys.push_back(plan_kidney(rng, p.shape, first_side));
  if (both) {
    p.kidneys.push_back(plan_kidney(rng, p.shape, -first_side));
  }
  for (auto& v : p.wave) {
    v = uniform(rng, 0.f, 6.2831853f);
  }
  p.noise_seed = rng();
  return p;
}

/// Where (z, y, x) lies for kidney k: 0 outside, 1 kidney, 2 tumour.
std::uint8_t class_at(const kidney& k, float z, float y, float x) {
  const float dz = (z - k.tumour[0]) / k.tumour_radius, dy = (y - k.tumour[1]) / k.tumour_radius,
              dx = (x - k.tumour[2]) / k.tumour_radius;
  if (dz * dz + dy * dy + dx * dx <= 1.f) {
    return 2;
  }
  const float rz = (z - k.centre[0]) / k.radius[0];
  const float bent_x = k.centre[2] + k.bend * rz * rz;
  const float ry = (y - k.centre[1]) / k.radius[1], rx = (x - bent_x) / k.radius[2];
  return rz * rz + ry * ry + rx * rx <= 1.f ? 1 : 0;
}

/// Noise in about [-12, 12] HU, a function of the seed and the voxel only.
float noise_at(std::uint64_t seed, std::uint64_t voxel) {
  const auto bits = splitmix64(seed ^ voxel);
  const float a = static_cast<float>(bits & 0xFFFF) / 65535.f;
  const float b = static_cast<float>((bits >> 16) & 0xFFFF) / 65535.f;
  return (a + b - 1.f) * 12.f;
}

float normalised(float hu) {
  return (std::clamp(hu, clip_low, clip_high) - mean_hu) / std_hu;
}

/// Slices [z0, z1) of the case into image and label.
void fill_slices(const case_plan& p, std::int64_t z0, std::int64_t z1, float* image,
                 std::uint8_t* label) {
  const auto h = p.shape[1], w = p.shape[2];
  for (auto z = z0; z < z1; ++z) {
    const float slow_z = 25.f * std::sin(0.05f * static_cast<float>(z) + p.wave[0]);
    for (std::int64_t y = 0; y < h; ++y) {
      const float fy = (static_cast<float>(y) - 0.5f * h) / (0.42f * h);
      const float slow_zy = slow_z * std::cos(0.04f * static_cast<float>(y) + p.wave[1]);
      const auto row = (z * h + y) * w;
      for (std::int64_t x = 0; x < w; ++x) {
        const float fx = (static_cast<float>(x) - 0.5f * w) / (0.46f * w);
        std::uint8_t c = 0;
        for (const auto& k : p.kidneys) {
          c = std::max(
              c, class_at(k, static_cast<float>(z), static_cast<float>(y), static_cast<float>(x)));
        }
        const bool body = fx * fx + fy * fy <= 1.f;
        float hu = !body    ? air_hu
                   : c == 2 ? tumour_hu
                   : c == 1 ? kidney_hu
                            : tissue_hu + slow_zy + 15.f * std::sin(0.03f * x + p.wave[2]);
        hu += noise_at(p.noise_seed, static_cast<std::uint64_t>(row + x));
        image[row + x] = normalised(hu);
        label[row + x] = body ? c : 0;
      }
    }
  }
}

expected<void> check(const synthetic_volume_options& o) {
  if (o.min_extent < 16 || o.max_side < o.min_extent || o.max_depth < o.min_extent) {
    return error{errc::invalid_argument,
                 "synthetic volumes: need min_extent >= 16 and max_side, max_depth >= min_extent "
                 "(got " +
                     std::to_string(o.min_extent) + ", " + std::to_string(o.max_side) + ", " +
                     std::to_string(o.max_depth) + ")"};
  }
  return {};
}

expected<void> prepare(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_empty(dir, ec)) {
    return error{errc::invalid_argument,
                 dir.string() + ": must be an empty directory (or not exist) for the cases"};
  }
  return {};
}

std::string case_name(std::uint64_t index, const char* suffix) {
  char name[32];
  std::snprintf(name, sizeof name, "case_%05llu_%s.npy", static_cast<unsigned long long>(index),
                suffix);
  return name;
}

}  // namespace

std::array<std::int64_t, 3> synthetic_volume_shape(const synthetic_volume_options& o,
                                                   std::uint64_t index) {
  auto rng = case_rng(o, index);
  return draw_shape(o, rng);
}

std::array<host_array, 2> make_synthetic_case(const synthetic_volume_options& o,
                                              std::uint64_t index) {
  const auto p = plan_case(o, index);
  const auto [d, h, w] = p.shape;
  auto image = host_array::uninitialized(dtype::float32, {1, d, h, w});
  auto label = host_array::uninitialized(dtype::uint8, {1, d, h, w});
  unsigned threads = o.threads != 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::int64_t>(threads, d));
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    const auto z0 = d * t / threads, z1 = d * (t + 1) / threads;
    workers.emplace_back(
        [&, z0, z1] { fill_slices(p, z0, z1, image.data<float>(), label.bytes.data()); });
  }
  for (auto& worker : workers) {
    worker.join();
  }
  return {std::move(image), std::move(label)};
}

expected<synthetic_volume_summary> generate_synthetic_volumes(
    const fs::path& dir, const synthetic_volume_options& options,
    const synthetic_volume_progress& progress) {
  if (auto ok = check(options); !ok) {
    return std::move(ok).error();
  }
  if (auto ok = prepare(dir); !ok) {
    return std::move(ok).error();
  }
  synthetic_volume_summary summary;
  for (std::uint64_t i = 0; i < options.count; ++i) {
    auto made = make_synthetic_case(options, i);
    for (int part = 0; part < 2; ++part) {
      auto written = write_npy(dir / case_name(i, part == 0 ? "x" : "y"), made[part]);
      if (!written) {
        return std::move(written).error();
      }
      summary.bytes += made[part].bytes.size();
    }
    summary.voxels += made[1].bytes.size();
    ++summary.cases;
    if (progress) {
      progress(summary.cases, options.count);
    }
  }
  return summary;
}

}  // namespace conveyor
