// bench_ceiling: the bare-loop ceiling of the pipeline. The same per-sample work as
// conveyor-node's default topology (read the record's bytes, run the ImageNet training recipe:
// decode, random_resized_crop 224, flip, normalize) in a plain loop on N threads, each taking
// the next position of the epoch order from one atomic counter: no actors, no batching, no
// collate. Samples are visited in the node's order (seed 0, shuffled) with the node's epoch
// seeds, so both do exactly the same crops. Prints one JSON line on stdout, with the mean work
// per sample over all, over large images (longest side >= 1800 px) and over the others.
// --decode picks the decode step's way (default "roi", the node's: DCT-scaled, and only the
// crop's rows and columns decoded): "scaled" (the whole image DCT-scaled) or "full"
// (--full-decode, as before scaled decodes).
//
// `--generate N` instead writes N synthetic JPEGs (core/codecs/synthetic_images.hpp, heavy-tailed:
// --large-fraction of them 1800-3200 px) into --dataset and exits: the benchmark scripts make
// their datasets with it.
//
// Exit codes: 0 done; 1 a sample or the generator failed; 2 a bad command line or dataset.
#include <opencv2/core/utility.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <sys/resource.h>

#include "apps/common/command_line.hpp"
#include "core/base/allocator_tuning.hpp"
#include "core/batching/epoch_order.hpp"
#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/synthetic_images.hpp"
#include "core/storage/sample_source.hpp"
#include "core/transforms/transform_chain.hpp"
#include "core/transforms/transform_spec.hpp"

namespace {

using namespace conveyor;
using clock_type = std::chrono::steady_clock;

struct arguments {
  std::string dataset;
  std::string format = "folder";
  std::uint64_t epochs = 1;
  unsigned threads = 0;  // 0: one per core
  std::uint64_t seed = 0;
  std::uint64_t generate = 0;  // > 0: write this many synthetic images and exit
  double large_fraction = synthetic_options{}.large_fraction;
  std::string decode = "roi";  // roi, scaled or full
  bool full_decode = false;    // the same as decode = full
};

/// What the workers share. The orders are read-only while they run.
struct epoch_plan {
  std::vector<std::vector<std::uint64_t>> orders;  ///< one sampler order per epoch
  std::vector<std::uint64_t> seeds;                ///< one epoch seed per epoch
  std::uint64_t dataset_size = 0;
  std::uint64_t total() const { return dataset_size * orders.size(); }
};

/// Work per sample, in nanoseconds, by size class.
struct class_work {
  std::atomic<std::uint64_t> samples{0};
  std::atomic<std::int64_t> ns{0};
  double mean_ms() const {
    auto n = samples.load();
    return n > 0 ? static_cast<double>(ns.load()) / 1e6 / static_cast<double>(n) : 0.0;
  }
};

struct run_totals {
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::uint64_t> failed{0};
  class_work large;  ///< longest side >= 1800 px
  class_work small;
};

constexpr int large_side = 1800;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

epoch_plan make_plan(std::uint64_t dataset_size, std::uint64_t seed, std::uint64_t epochs) {
  epoch_plan plan;
  plan.dataset_size = dataset_size;
  for (std::uint64_t e = 0; e < epochs; ++e) {
    plan.orders.push_back(epoch_order(dataset_size, seed, e));
    plan.seeds.push_back(epoch_seed(seed, e));
  }
  return plan;
}

/// Reads and transforms one sample, as the node's reader and preprocessor do between them,
/// and counts its work in its size class.
expected<void> prepare_one(const sample_source& source, const transform_chain& chain,
                           std::uint64_t id, std::uint64_t epoch_seed_value, run_totals& totals) {
  const auto start = clock_type::now();
  auto r = source.read(id);
  if (!r) {
    return r.error();
  }
  auto size = probe_image(r->payload);  // the header alone
  sample_state s;
  s.sample_id = id;
  s.epoch_seed = epoch_seed_value;
  const auto label = r->label;
  hold_record(s, std::move(*r));
  chain.start(s, label);
  auto ok = chain.run_all(s);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - start);
  auto& work_class =
      size && std::max(size->width, size->height) >= large_side ? totals.large : totals.small;
  work_class.samples.fetch_add(1, std::memory_order_relaxed);
  work_class.ns.fetch_add(ns.count(), std::memory_order_relaxed);
  return ok;
}

// One worker: takes positions of the whole run (every epoch, back to back, like the node's
// batcher, which begins the next epoch as soon as the current one is dispatched).
void work(const sample_source& source, const transform_chain& chain, const epoch_plan& plan,
          std::atomic<std::uint64_t>& next, run_totals& totals) {
  for (auto p = next.fetch_add(1); p < plan.total(); p = next.fetch_add(1)) {
    auto epoch = p / plan.dataset_size;
    auto id = plan.orders[epoch][p % plan.dataset_size];
    auto ok = prepare_one(source, chain, id, plan.seeds[epoch], totals);
    if (!ok) {
      std::fprintf(stderr, "bench_ceiling: sample %llu: %s\n", static_cast<unsigned long long>(id),
                   ok.error().what().c_str());
      totals.failed.fetch_add(1);
    }
    totals.done.fetch_add(1, std::memory_order_relaxed);
  }
}

/// The node's default recipe, its decode step as --decode says.
std::vector<transform_spec> recipe(const arguments& args) {
  auto specs = imagenet_train_recipe();
  for (auto& spec : specs) {
    if (auto* decode = std::get_if<decode_spec>(&spec)) {
      decode->scaled = args.decode != "full";
      decode->roi = args.decode == "roi";
    }
  }
  return specs;
}

int run_ceiling(const arguments& args) {
  auto format = args.format == "shards" ? dataset_format::shards : dataset_format::folder;
  auto source = open_sample_source(args.dataset, format);
  if (!source) {
    std::fprintf(stderr, "bench_ceiling: %s\n", source.error().what().c_str());
    return 2;
  }
  auto chain = transform_chain::build(recipe(args));
  if (!chain) {
    std::fprintf(stderr, "bench_ceiling: %s\n", chain.error().what().c_str());
    return 2;
  }
  unsigned threads =
      args.threads > 0 ? args.threads : std::max(1U, std::thread::hardware_concurrency());
  auto plan = make_plan((*source)->size(), args.seed, args.epochs);
  std::atomic<std::uint64_t> next{0};
  run_totals totals;
  auto start = clock_type::now();
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&] { work(**source, *chain, plan, next, totals); });
  }
  for (auto& th : pool) {
    th.join();
  }
  auto wall = seconds_since(start);
  auto ok = totals.done.load() - totals.failed.load();
  std::printf(
      "{\"samples\":%llu,\"failed\":%llu,\"epochs\":%llu,\"dataset_size\":%llu,\"threads\":%u,"
      "\"wall_s\":%.6g,\"samples_per_s\":%.6g,\"peak_rss_mb\":%.6g,\"full_decode\":%s,"
      "\"decode\":\"%s\",\"mean_ms\":%.6g,\"large_ms\":%.6g,\"small_ms\":%.6g,\"large\":%llu}\n",
      static_cast<unsigned long long>(ok), static_cast<unsigned long long>(totals.failed.load()),
      static_cast<unsigned long long>(args.epochs),
      static_cast<unsigned long long>(plan.dataset_size), threads, wall,
      wall > 0 ? static_cast<double>(ok) / wall : 0.0, peak_rss_mb(),
      args.decode == "full" ? "true" : "false", args.decode.c_str(),
      static_cast<double>(totals.large.ns.load() + totals.small.ns.load()) / 1e6 /
          static_cast<double>(std::max<std::uint64_t>(1, totals.done.load())),
      totals.large.mean_ms(), totals.small.mean_ms(),
      static_cast<unsigned long long>(totals.large.samples.load()));
  return totals.failed.load() == 0 ? 0 : 1;
}

int run_generator(const arguments& args) {
  synthetic_options options;
  options.count = args.generate;
  options.large_fraction = args.large_fraction;
  options.threads = args.threads;
  auto start = clock_type::now();
  auto summary = generate_synthetic_images(args.dataset, options);
  if (!summary) {
    std::fprintf(stderr, "bench_ceiling: %s\n", summary.error().what().c_str());
    return 1;
  }
  std::printf("{\"files\":%llu,\"bytes\":%llu,\"large\":%llu,\"wall_s\":%.6g}\n",
              static_cast<unsigned long long>(summary->files),
              static_cast<unsigned long long>(summary->bytes),
              static_cast<unsigned long long>(summary->large), seconds_since(start));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  conveyor::keep_freed_memory_for_reuse();  // as conveyor-node does
  CLI::App app{"bench_ceiling: the pipeline's per-sample work in a bare loop on N threads"};
  arguments args;
  app.add_option("--dataset", args.dataset, "image folder or shard directory")->required();
  app.add_option("--format", args.format, "folder or shards")
      ->check(CLI::IsMember({"folder", "shards"}));
  app.add_option("--epochs", args.epochs, "epochs to run")->check(CLI::Range(1, 1000000));
  app.add_option("--threads", args.threads, "worker threads (0: one per core)");
  app.add_option("--seed", args.seed, "dataset.seed of the node to match");
  app.add_option("--generate", args.generate,
                 "write this many synthetic JPEGs into --dataset (new or empty) and exit");
  app.add_option("--large-fraction", args.large_fraction,
                 "with --generate: share of large (1800-3200 px) images")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--decode", args.decode,
                 "roi (default: DCT-scaled, the crop's region only), scaled (the whole image "
                 "DCT-scaled) or full")
      ->check(CLI::IsMember({"roi", "scaled", "full"}));
  app.add_flag("--full-decode", args.full_decode, "the same as --decode full");
  if (auto exit_code = conveyor::parse_command_line(app, argc, argv)) {
    return *exit_code;
  }
  if (args.full_decode) {
    args.decode = "full";
  }
  // One core per worker, as each preprocessor has: no OpenCV thread pool underneath.
  cv::setNumThreads(0);
  return args.generate > 0 ? run_generator(args) : run_ceiling(args);
}
