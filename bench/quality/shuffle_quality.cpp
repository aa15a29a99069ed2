// shuffle_quality: how well each epoch order mixes a dataset packed in class order (the worst
// case, as many ImageNet tars are): per-batch label entropy (bits, of the batch's own label
// histogram) and distinct shards per batch, averaged over an epoch's batches, for the global
// shuffle, blocks (core/batching/epoch_order.hpp) at several block and span sizes, and
// WebDataset's order (shards shuffled, read one after another, then a shuffle buffer), with
// the memory each needs resident. Pure computation on the orders: no files.
//
//   shuffle_quality SAMPLES CLASSES SAMPLE_BYTES SHARD_BYTES BATCH [EPOCHS]
//
// Prints one markdown table. bench/s3_blocks.sh runs it for its set and for ImageNet's shape.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/batching/epoch_order.hpp"

namespace {

using conveyor::sample_order;

struct shape {
  std::uint64_t samples = 0;
  std::uint64_t classes = 0;
  double sample_bytes = 0;
  double shard_bytes = 0;
  std::uint64_t batch = 0;
  std::uint64_t epochs = 1;

  std::uint64_t label(std::uint64_t id) const { return id * classes / samples; }
  std::uint64_t per_shard() const {
    return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(shard_bytes / sample_bytes));
  }
  std::uint64_t shard(std::uint64_t id) const { return id / per_shard(); }
};

struct quality {
  double entropy = 0;  ///< bits, mean over batches
  double shards = 0;   ///< distinct shards, mean over batches
};

quality measure(const shape& s, const std::vector<std::uint64_t>& order) {
  quality q;
  std::uint64_t batches = 0;
  for (std::size_t first = 0; first + s.batch <= order.size(); first += s.batch) {
    std::vector<std::uint64_t> count(s.classes, 0);
    std::set<std::uint64_t> labels;
    std::set<std::uint64_t> shards;
    for (auto p = first; p < first + s.batch; ++p) {
      ++count[s.label(order[p])];
      labels.insert(s.label(order[p]));
      shards.insert(s.shard(order[p]));
    }
    double h = 0;
    for (auto l : labels) {
      const double f = static_cast<double>(count[l]) / static_cast<double>(s.batch);
      h -= f * std::log2(f);
    }
    q.entropy += h;
    q.shards += static_cast<double>(shards.size());
    ++batches;
  }
  q.entropy /= static_cast<double>(batches);
  q.shards /= static_cast<double>(batches);
  return q;
}

// WebDataset's order: its shards in a random order, read front to back one after another,
// through a shuffle buffer of `buffer` samples (webdataset's shuffle(): once full, each sample
// in takes the place of a random one, which goes out; at the end the rest go out at random).
std::vector<std::uint64_t> webdataset_order(const shape& s, std::uint64_t buffer,
                                            std::uint64_t epoch) {
  std::mt19937_64 rng(conveyor::epoch_seed(7, epoch));
  const auto shards = (s.samples + s.per_shard() - 1) / s.per_shard();
  std::vector<std::uint64_t> shard_order(shards);
  for (std::uint64_t i = 0; i < shards; ++i) {
    shard_order[i] = i;
  }
  std::shuffle(shard_order.begin(), shard_order.end(), rng);
  std::vector<std::uint64_t> held;
  std::vector<std::uint64_t> out;
  out.reserve(s.samples);
  for (auto sh : shard_order) {
    for (auto id = sh * s.per_shard(); id < std::min(s.samples, (sh + 1) * s.per_shard()); ++id) {
      if (held.size() < buffer) {
        held.push_back(id);
        continue;
      }
      auto& slot = held[rng() % held.size()];
      out.push_back(slot);
      slot = id;
    }
  }
  std::shuffle(held.begin(), held.end(), rng);
  out.insert(out.end(), held.begin(), held.end());
  return out;
}

template <class Orders>
quality over_epochs(const shape& s, Orders order_of) {
  quality sum;
  for (std::uint64_t e = 0; e < s.epochs; ++e) {
    auto q = measure(s, order_of(e));
    sum.entropy += q.entropy / static_cast<double>(s.epochs);
    sum.shards += q.shards / static_cast<double>(s.epochs);
  }
  return sum;
}

void row(const std::string& name, const quality& q, const quality& global, double resident) {
  std::printf("| %s | %.3f | %.3f | %.1f | %.0f |\n", name.c_str(), q.entropy,
              q.entropy / global.entropy, q.shards, resident / 1e6);
}

std::string mib(double bytes) {
  return std::to_string(static_cast<long long>(std::llround(bytes / (1 << 20)))) + " MiB";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(
        stderr, "usage: shuffle_quality SAMPLES CLASSES SAMPLE_BYTES SHARD_BYTES BATCH [EPOCHS]\n");
    return 2;
  }
  shape s;
  s.samples = std::strtoull(argv[1], nullptr, 10);
  s.classes = std::strtoull(argv[2], nullptr, 10);
  s.sample_bytes = std::strtod(argv[3], nullptr);
  s.shard_bytes = std::strtod(argv[4], nullptr);
  s.batch = std::strtoull(argv[5], nullptr, 10);
  s.epochs = argc > 6 ? std::strtoull(argv[6], nullptr, 10) : 1;
  if (s.samples == 0 || s.classes == 0 || s.sample_bytes <= 0 || s.shard_bytes <= 0 ||
      s.batch == 0 || s.batch > s.samples || s.epochs == 0) {
    std::fprintf(stderr, "shuffle_quality: every argument must be positive, BATCH <= SAMPLES\n");
    return 2;
  }
  std::printf(
      "| order | label entropy per batch (bits) | of the global shuffle's | distinct "
      "shards per batch | resident MB |\n|---|---|---|---|---|\n");
  const auto global = over_epochs(s, [&](std::uint64_t e) {
    return conveyor::epoch_order(s.samples, 7, e, sample_order::shuffled(true));
  });
  row("global", global, global, 0);
  for (double block : {1 << 20, 4 << 20, 16 << 20}) {
    for (std::uint64_t span : {8u, 64u, 128u, 256u, 512u}) {
      const auto samples = std::max<std::uint64_t>(1, std::llround(block / s.sample_bytes));
      const auto order = sample_order::in_blocks(samples, span);
      const auto q = over_epochs(
          s, [&](std::uint64_t e) { return conveyor::epoch_order(s.samples, 7, e, order); });
      // A span being read and the next one fetched; never more than the set.
      row("blocks of " + mib(block) + ", span " + std::to_string(span), q, global,
          std::min(2.0 * static_cast<double>(samples * span) * s.sample_bytes,
                   static_cast<double>(s.samples) * s.sample_bytes));
    }
  }
  for (std::uint64_t buffer : {1000u, 5000u}) {
    const auto q = over_epochs(s, [&](std::uint64_t e) { return webdataset_order(s, buffer, e); });
    row("WebDataset: shards shuffled, buffer " + std::to_string(buffer), q, global,
        static_cast<double>(buffer) * s.sample_bytes);
  }
  return 0;
}
