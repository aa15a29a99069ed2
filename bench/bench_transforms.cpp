// Per-sample transform cost on one core: JPEG decode alone, and the ImageNet training recipe
// (decode, random_resized_crop 224, flip, normalize), on ImageNet-sized, mixed and large images,
// each with the crop-aware scaled decode on ("/scaled") and off ("/full"), and decode alone at
// every DCT scale (decode_at_M-8). items/s is samples/s per core. The scaled runs also report how
// close they come to the full decode: PSNR of the 224x224 crop against the full-decode crop of the
// same sample (psnr_mean_dB, psnr_min_dB), the share of samples decoded reduced (reduced_pct) and
// the decoded pixels as a share of the source's (decoded_px_pct).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/synthetic_images.hpp"
#include "core/storage/image_list.hpp"
#include "core/transforms/crop_geometry.hpp"
#include "core/transforms/transform_chain.hpp"

namespace conveyor {
namespace {

/// What a photo-like image holds: random colours every `cell` pixels, smoothly interpolated,
/// plus sensor-like Gaussian noise. With noise, entropy decoding costs about what it costs on
/// high-ISO photos and dominates the decode; without, the image is as smooth at pixel scale as
/// most of a large photo is.
struct content {
  int cell = 8;
  double noise_sigma = 8.0;
};
constexpr content noisy{8, 8.0};
constexpr content smooth{32, 0.0};

std::vector<std::uint8_t> photo_like_jpeg(int width, int height, std::uint64_t seed, content kind) {
  cv::RNG rng(seed);
  cv::Mat coarse(height / kind.cell + 2, width / kind.cell + 2, CV_8UC3);
  rng.fill(coarse, cv::RNG::UNIFORM, 0, 256);
  cv::Mat image;
  cv::resize(coarse, image, cv::Size(width, height), 0, 0, cv::INTER_CUBIC);
  if (kind.noise_sigma > 0) {
    cv::Mat noise(height, width, CV_16SC3);
    rng.fill(noise, cv::RNG::NORMAL, 0, kind.noise_sigma);
    image.convertTo(image, CV_16SC3);
    cv::Mat noisy_image = image + noise;
    noisy_image.convertTo(image, CV_8UC3);
  }
  std::vector<std::uint8_t> out;
  cv::imencode(".jpg", image, out, {cv::IMWRITE_JPEG_QUALITY, 90});
  return out;
}

struct image_set {
  std::vector<std::vector<std::uint8_t>> jpegs;
  double pixels = 0;
  double bytes = 0;

  void add(std::vector<std::uint8_t> jpeg) {
    auto info = probe_image(jpeg);
    pixels += info ? static_cast<double>(info->width) * info->height : 0.0;
    bytes += static_cast<double>(jpeg.size());
    jpegs.push_back(std::move(jpeg));
  }
};

/// `count` images with sides drawn from [min_side, max_side] (fixed when equal).
image_set make_set(int count, int min_w, int max_w, int min_h, int max_h, std::uint64_t seed,
                   content kind = noisy) {
  cv::RNG rng(seed);
  image_set set;
  for (int i = 0; i < count; ++i) {
    int w = rng.uniform(min_w, max_w + 1);
    int h = rng.uniform(min_h, max_h + 1);
    set.add(photo_like_jpeg(w, h, seed + static_cast<std::uint64_t>(i), kind));
  }
  return set;
}

std::vector<std::uint8_t> file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// `count` images of the dataset generator (conveyor-pack --synthetic), `large_fraction` of
/// them 1800-3200 px, the others 300-640 px; empty after a report on stderr.
image_set synthetic_set(std::uint64_t count, double large_fraction, std::uint64_t seed) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() /
                 ("conveyor-bench-synthetic-" + std::to_string(cv::getTickCount()));
  synthetic_options options;
  options.count = count;
  options.large_fraction = large_fraction;
  options.seed = seed;
  image_set set;
  auto written = generate_synthetic_images(dir, options);
  auto files = written ? scan_image_folder(dir) : expected<image_list>(written.error());
  if (!files) {
    std::fprintf(stderr, "bench_transforms: synthetic images: %s\n", files.error().what().c_str());
  }
  for (std::size_t i = 0; files && i < files->entries.size(); ++i) {
    set.add(file_bytes(files->entries[i].path));
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return set;
}

// One iteration is one pass over the whole set, so that every image weighs the same in the
// average however few iterations the large images allow.
void add_set_counters(benchmark::State& state, const image_set& set) {
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(set.jpegs.size()));
  state.counters["kpx/img"] = set.pixels / static_cast<double>(set.jpegs.size()) / 1000;
  state.counters["KB/img"] = set.bytes / static_cast<double>(set.jpegs.size()) / 1000;
}

void bm_decode(benchmark::State& state, const image_set& set, scale_ratio scale) {
  decode_options options;
  options.scale_num = scale.num;
  options.scale_denom = scale.denom;
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): benchmark idiom
    for (const auto& jpeg : set.jpegs) {
      auto image = decode_image(jpeg, options);
      if (!image) {
        state.SkipWithError(image.error().what().c_str());
        return;
      }
      benchmark::DoNotOptimize(image->data);
    }
  }
  add_set_counters(state, set);
}

/// The ImageNet recipe with the decode step's scaling on or off.
expected<transform_chain> recipe_chain(bool scaled) {
  auto specs = imagenet_train_recipe();
  std::get<decode_spec>(specs[0]).scaled = scaled;
  return transform_chain::build(specs);
}

// The recipe's fields: label, image.
constexpr std::size_t image_field = 1;

sample_state make_sample(std::uint64_t id, const std::vector<std::uint8_t>& jpeg) {
  sample_state s;
  s.sample_id = id;
  s.encoded = jpeg;  // the reader hands over bytes of its own like this
  s.fields.resize(image_field + 1);
  return s;
}

struct psnr_stats {
  double sum = 0;
  double min = 0;
  int count = 0;

  void add(double psnr) {
    min = count == 0 ? psnr : std::min(min, psnr);
    sum += psnr;
    ++count;
  }
  double mean() const { return count == 0 ? 0.0 : sum / count; }
};

/// A sample after the decode and random_resized_crop steps of a chain.
struct cropped_sample {
  std::optional<planned_crop> plan;
  cv::Mat decoded;  ///< the image between the two steps
  cv::Mat crop;
};

expected<cropped_sample> decode_and_crop(const transform_chain& chain, sample_state s) {
  cropped_sample out;
  if (auto ok = chain.run_next(s); !ok) {
    return std::move(ok).error();
  }
  out.plan = s.crop_plan;
  out.decoded = s.fields[image_field].image;  // steps replace images, never write into them
  if (auto ok = chain.run_next(s); !ok) {
    return std::move(ok).error();
  }
  out.crop = s.fields[image_field].image;
  return out;
}

/// The crop as torchvision resizes it (antialiased): the full decode's box, area-averaged.
cv::Mat antialiased_crop(const cropped_sample& full, const crop_box& box) {
  cv::Mat out;
  cv::resize(full.decoded(cv::Rect(box.left, box.top, box.width, box.height)), out,
             full.crop.size(), 0, 0, cv::INTER_AREA);
  return out;
}

bool decoded_reduced(const cropped_sample& c) {
  return c.plan && c.plan->decode_scale != scale_ratio{};
}

/// The quality counters of the scaled decode over `set` (untimed), over the samples decoded
/// reduced (the others must come out bit-identical to the full decode): PSNR of the scaled
/// crop against the full decode's (psnr_full_*), and of both against an antialiased reference
/// (psnr_aa_*; OpenCV's bilinear resize of a large box aliases, torchvision's does not).
void add_quality_counters(benchmark::State& state, const image_set& set) {
  auto scaled = recipe_chain(true);
  auto full = recipe_chain(false);
  psnr_stats vs_full, scaled_vs_aa, full_vs_aa;
  double decoded_share = 0;
  for (std::size_t i = 0; scaled && full && i < set.jpegs.size(); ++i) {
    auto a = decode_and_crop(*scaled, make_sample(i, set.jpegs[i]));
    auto b = decode_and_crop(*full, make_sample(i, set.jpegs[i]));
    if (!a || !b) {
      state.SkipWithError((a ? b.error() : a.error()).what().c_str());
      return;
    }
    decoded_share +=
        static_cast<double>(a->decoded.total()) / static_cast<double>(b->decoded.total());
    if (!decoded_reduced(*a)) {
      if (cv::norm(a->crop, b->crop, cv::NORM_INF) != 0) {
        state.SkipWithError("a sample decoded in full differs from the full-decode chain");
        return;
      }
      continue;
    }
    cv::Mat reference = antialiased_crop(*b, a->plan->source_box);
    vs_full.add(cv::PSNR(a->crop, b->crop));
    scaled_vs_aa.add(cv::PSNR(a->crop, reference));
    full_vs_aa.add(cv::PSNR(b->crop, reference));
  }
  const auto n = static_cast<double>(set.jpegs.size());
  state.counters["reduced_pct"] = 100.0 * vs_full.count / n;
  state.counters["decoded_px_pct"] = 100 * decoded_share / n;
  state.counters["psnr_full_mean_dB"] = vs_full.mean();
  state.counters["psnr_full_min_dB"] = vs_full.min;
  state.counters["psnr_aa_scaled_dB"] = scaled_vs_aa.mean();
  state.counters["psnr_aa_full_dB"] = full_vs_aa.mean();
}

void bm_recipe(benchmark::State& state, const image_set& set, bool scaled) {
  auto chain = recipe_chain(scaled);
  if (!chain) {
    state.SkipWithError(chain.error().what().c_str());
    return;
  }
  std::vector<double> step_ns(chain->size(), 0.0);
  std::uint64_t id = 0;
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): benchmark idiom
    for (const auto& jpeg : set.jpegs) {
      sample_state s = make_sample(id++, jpeg);
      auto ok = chain->run_all(s);
      if (!ok) {
        state.SkipWithError(ok.error().what().c_str());
        return;
      }
      benchmark::DoNotOptimize(s.fields[image_field].array.bytes.data());
      for (std::size_t k = 0; k < step_ns.size(); ++k) {
        step_ns[k] += static_cast<double>(s.step_ns[k]);
      }
    }
  }
  add_set_counters(state, set);
  const double samples = static_cast<double>(id);
  for (std::size_t k = 0; k < step_ns.size(); ++k) {
    state.counters[std::string(chain->step(k).name()) + "_us"] = step_ns[k] / samples / 1000;
  }
  if (scaled) {
    add_quality_counters(state, set);
  }
}

void register_all() {
  static const image_set imagenet = make_set(32, 500, 500, 375, 375, 1);
  static const image_set mixed = make_set(48, 300, 640, 300, 640, 2);
  static const image_set large = make_set(8, 2000, 3000, 2000, 3000, 3);
  static const image_set smooth_mixed = make_set(48, 300, 640, 300, 640, 4, smooth);
  static const image_set smooth_large = make_set(8, 2000, 3000, 2000, 3000, 5, smooth);
  // The generator's own images: a normal mix (10% large, as `conveyor-pack --synthetic`
  // writes by default) and large ones only.
  static const image_set synthetic_mix = synthetic_set(60, 0.10, 6);
  static const image_set synthetic_large = synthetic_set(8, 1.0, 7);
  const std::vector<std::pair<std::string, const image_set*>> sets{
      {"500x375", &imagenet},
      {"mixed_300-640", &mixed},
      {"large_2000-3000", &large},
      {"smooth_mixed_300-640", &smooth_mixed},
      {"smooth_large_2000-3000", &smooth_large},
      {"synthetic_mix_10pct_large", &synthetic_mix},
      {"synthetic_large_1800-3200", &synthetic_large}};
  for (const auto& [name, set] : sets) {
    benchmark::RegisterBenchmark(("decode/" + name).c_str(), bm_decode, *set, scale_ratio{});
    for (bool scaled : {false, true}) {
      benchmark::RegisterBenchmark(
          ("imagenet_recipe/" + name + (scaled ? "/scaled" : "/full")).c_str(), bm_recipe, *set,
          scaled);
    }
  }
  // Every DCT scale TurboJPEG offers, on large images: which ones are cheaper than 1/1.
  for (const auto& [name, set] :
       {std::pair{"large_2000-3000", &large}, std::pair{"smooth_large_2000-3000", &smooth_large}}) {
    for (const auto& scale : jpeg_reduction_scales()) {
      if (scale != scale_ratio{}) {
        benchmark::RegisterBenchmark(("decode_at_" + std::to_string(scale.num) + "-" +
                                      std::to_string(scale.denom) + "/" + name)
                                         .c_str(),
                                     bm_decode, *set, scale);
      }
    }
  }
}

}  // namespace
}  // namespace conveyor

int main(int argc, char** argv) {
  cv::setNumThreads(0);  // one core: the pipeline runs one preprocessor per core
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  conveyor::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
