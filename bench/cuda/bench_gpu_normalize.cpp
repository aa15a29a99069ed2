// bench_gpu_normalize: batches/s into the GPU with normalisation on the GPU (uint8 samples
// cross PCIe, the normalize kernel writes float32 or bfloat16 NCHW on the device) against
// normalisation on the CPU (float32 samples, 4x the bytes, cross PCIe as they are). Both run the
// CUDA feeder's loop (core/feeding/slot_ring.hpp): each sample written into its place in a
// pinned slot, one copy per batch, each batch released once complete. Samples are prepared
// beforehand from random --height x --width images by the real transform steps (to_uint8 for
// the GPU path, normalize for the CPU path), whose CPU cost per sample is measured too:
// "cpu_cores_saved" is the cores the CPU path would spend on normalize beyond to_uint8 to keep
// up with the GPU path's rate. Prints one JSON line on stdout; without a CUDA device a
// "skipped" line, exit 0. Exit code 1: a CUDA call or a transform step failed.
#include <opencv2/core.hpp>

#include <cstring>
#include <random>

#include "apps/common/command_line.hpp"
#include "bench/cuda/feed_loop.hpp"
#include "core/transforms/transform_step.hpp"

namespace {

using namespace conveyor;
using namespace conveyor::bench;

constexpr int distinct_images = 16;  // samples repeat with this period within a batch

std::vector<cv::Mat> random_images(int height, int width) {
  std::vector<cv::Mat> images;
  cv::RNG rng(7);
  for (int i = 0; i < distinct_images; ++i) {
    cv::Mat image(height, width, CV_8UC3);
    rng.fill(image, cv::RNG::UNIFORM, 0, 256);
    images.push_back(image);
  }
  return images;
}

struct prepared {
  std::vector<host_array> tensors;
  double us_per_sample = 0;
};

/// Runs `spec`'s step, on field "image", on every image (`rounds` times, for a stable time
/// per sample).
prepared prepare(const transform_spec& spec, const std::vector<cv::Mat>& images, int rounds) {
  chain_fields fields;
  const auto image_field =
      fields.write("image", {field_kind::tensor, dtype::uint8, 3, {varies, varies, 3, 0}}, true);
  auto step = or_exit(make_step(spec, fields, nullptr));
  std::mt19937_64 rng(1);
  prepared out;
  auto start = clock_type::now();
  for (int r = 0; r < rounds; ++r) {
    out.tensors.clear();
    for (const auto& image : images) {
      sample_state s;
      s.key = "bench";
      s.fields.resize(fields.size());
      s.fields[image_field].set(image);
      or_exit(step->apply(s, rng));
      out.tensors.push_back(std::move(s.fields[image_field].array));
    }
  }
  const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  out.us_per_sample = seconds * 1e6 / (static_cast<double>(rounds) * images.size());
  return out;
}

/// Batches/s through a feeder made with `normalize` and `out`, its samples taken from `samples`.
double batches_per_s(const batch_options& opts, const std::vector<host_array>& samples,
                     std::optional<normalize_coefficients> normalize, dtype out) {
  auto ring = cuda_ring(opts.device, opts.slots, normalize, out);
  const auto layout = opts.layout(samples.front().type);
  const double seconds = median_seconds(opts.repeats, [&] {
    return feed(*ring, layout, opts.batches, [&](ring_slot& slot, int i) {
      const auto& t = samples[static_cast<std::size_t>(i) % samples.size()];
      std::memcpy(slot.host() + static_cast<std::size_t>(i) * t.bytes.size(), t.bytes.data(),
                  t.bytes.size());
    });
  });
  return opts.batches / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  batch_options opts;
  opts.batches = 50;
  int rounds = 20;
  CLI::App app{"Batches/s into the GPU: normalize on the GPU (uint8 over PCIe) vs on the CPU"};
  opts.add_to(app);
  app.add_option("--cpu-rounds", rounds, "rounds of the CPU steps over the images, for timing")
      ->check(CLI::PositiveNumber);
  if (auto code = parse_command_line(app, argc, argv)) {
    return *code;
  }
  auto name = device_name("gpu_normalize", opts.device);
  if (!name) {
    return 0;
  }
  cv::setNumThreads(1);  // one core's cost per sample, as one preprocessor pays it
  const auto images = random_images(opts.height, opts.width);
  const normalize_spec imagenet;
  const auto as_uint8 = prepare(to_uint8_spec{}, images, rounds);
  const auto normalized = prepare(imagenet, images, rounds);
  const auto k = coefficients_of(imagenet);

  const double gpu_f32 = batches_per_s(opts, as_uint8.tensors, k, dtype::float32);
  const double gpu_bf16 = batches_per_s(opts, as_uint8.tensors, k, dtype::bfloat16);
  const double cpu_f32 = batches_per_s(opts, normalized.tensors, std::nullopt, dtype::float32);

  const double saved_us = normalized.us_per_sample - as_uint8.us_per_sample;
  const double cores_saved = saved_us * opts.batch * gpu_f32 / 1e6;
  std::printf(
      "{\"bench\": \"gpu_normalize\", \"device\": \"%s\", \"batch\": %d, \"height\": %d, "
      "\"width\": %d, \"slots\": %zu, \"gpu_f32_batches_s\": %.1f, \"gpu_bf16_batches_s\": %.1f, "
      "\"cpu_f32_batches_s\": %.1f, \"ratio_gpu_f32_vs_cpu\": %.2f, \"pcie_mb_per_batch_gpu\": "
      "%.1f, \"pcie_mb_per_batch_cpu\": %.1f, \"cpu_us_per_sample_normalize\": %.1f, "
      "\"cpu_us_per_sample_to_uint8\": %.1f, \"cpu_cores_saved\": %.2f}\n",
      name->c_str(), opts.batch, opts.height, opts.width, opts.slots, gpu_f32, gpu_bf16, cpu_f32,
      gpu_f32 / cpu_f32, static_cast<double>(opts.layout(dtype::uint8).bytes) / 1e6,
      static_cast<double>(opts.layout(dtype::float32).bytes) / 1e6, normalized.us_per_sample,
      as_uint8.us_per_sample, cores_saved);
  return 0;
}
