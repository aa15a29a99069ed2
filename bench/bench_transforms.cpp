// Per-sample transform cost on one core: JPEG decode alone, and the ImageNet training recipe
// (decode, random_resized_crop 224, flip, normalize), on ImageNet-sized and on large images.
// items/s is samples/s per core.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "core/jpeg_decoder.hpp"
#include "core/transform_chain.hpp"

namespace conveyor {
namespace {

/// Photo-like JPEG bytes: smooth random colour fields (what real photos mostly are) plus
/// sensor-like noise, so that entropy decoding costs about what it costs on photos.
std::vector<std::uint8_t> photo_like_jpeg(int width, int height, std::uint64_t seed) {
  cv::RNG rng(seed);
  cv::Mat coarse(height / 8 + 2, width / 8 + 2, CV_8UC3);
  rng.fill(coarse, cv::RNG::UNIFORM, 0, 256);
  cv::Mat image;
  cv::resize(coarse, image, cv::Size(width, height), 0, 0, cv::INTER_CUBIC);
  cv::Mat noise(height, width, CV_16SC3);
  rng.fill(noise, cv::RNG::NORMAL, 0, 8);
  image.convertTo(image, CV_16SC3);
  cv::Mat noisy = image + noise;
  noisy.convertTo(image, CV_8UC3);
  std::vector<std::uint8_t> out;
  cv::imencode(".jpg", image, out, {cv::IMWRITE_JPEG_QUALITY, 90});
  return out;
}

struct image_set {
  std::vector<std::vector<std::uint8_t>> jpegs;
  double pixels = 0;
  double bytes = 0;
};

/// `count` images with sides drawn from [min_side, max_side] (fixed when equal).
image_set make_set(int count, int min_w, int max_w, int min_h, int max_h, std::uint64_t seed) {
  cv::RNG rng(seed);
  image_set set;
  for (int i = 0; i < count; ++i) {
    int w = rng.uniform(min_w, max_w + 1);
    int h = rng.uniform(min_h, max_h + 1);
    set.jpegs.push_back(photo_like_jpeg(w, h, seed + static_cast<std::uint64_t>(i)));
    set.pixels += static_cast<double>(w) * h;
    set.bytes += static_cast<double>(set.jpegs.back().size());
  }
  return set;
}

// One iteration is one pass over the whole set, so that every image weighs the same in the
// average however few iterations the large images allow.
void add_set_counters(benchmark::State& state, const image_set& set) {
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(set.jpegs.size()));
  state.counters["kpx/img"] = set.pixels / static_cast<double>(set.jpegs.size()) / 1000;
  state.counters["KB/img"] = set.bytes / static_cast<double>(set.jpegs.size()) / 1000;
}

void bm_decode(benchmark::State& state, const image_set& set, int scale_denom) {
  decode_options options;
  options.scale_denom = scale_denom;
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

void bm_recipe(benchmark::State& state, const image_set& set) {
  auto chain = transform_chain::build(imagenet_train_recipe());
  if (!chain) {
    state.SkipWithError(chain.error().what().c_str());
    return;
  }
  std::vector<double> step_ns(chain->size(), 0.0);
  std::uint64_t id = 0;
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): benchmark idiom
    for (const auto& jpeg : set.jpegs) {
      sample_state s;
      s.sample_id = id++;
      s.encoded = jpeg;  // the reader hands over bytes of its own like this
      auto ok = chain->run_all(s);
      if (!ok) {
        state.SkipWithError(ok.error().what().c_str());
        return;
      }
      benchmark::DoNotOptimize(s.output.bytes.data());
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
}

void register_all() {
  static const image_set imagenet = make_set(32, 500, 500, 375, 375, 1);
  static const image_set mixed = make_set(48, 300, 640, 300, 640, 2);
  static const image_set large = make_set(8, 2000, 3000, 2000, 3000, 3);
  const std::vector<std::pair<std::string, const image_set*>> sets{
      {"500x375", &imagenet}, {"mixed_300-640", &mixed}, {"large_2000-3000", &large}};
  for (const auto& [name, set] : sets) {
    benchmark::RegisterBenchmark(("decode/" + name).c_str(), bm_decode, *set, 1);
    benchmark::RegisterBenchmark(("imagenet_recipe/" + name).c_str(), bm_recipe, *set);
  }
  for (int denom : {2, 4}) {
    benchmark::RegisterBenchmark(
        ("decode_scaled_1/" + std::to_string(denom) + "/large_2000-3000").c_str(), bm_decode, large,
        denom);
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
