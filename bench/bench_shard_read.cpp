// Shard reading throughput (MB/s of payload): sequential streaming with read-ahead and random
// access by index, from the page cache ("warm") and after evicting the files ("cold":
// posix_fadvise DONTNEED before each pass, so the bytes come from the disk again).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "core/storage/dataset_writer.hpp"
#include "core/storage/shard_stream.hpp"
#include "core/storage/sharded_dataset.hpp"

namespace {

using namespace conveyor;

constexpr std::uint64_t records = 2400;

// 256 MB of 110 KB payloads (the size of an ImageNet JPEG) in 64 MB shards, written once.
const std::filesystem::path& dataset_dir() {
  static const auto dir = [] {
    auto d = std::filesystem::temp_directory_path() / "conveyor-bench-shards";
    std::filesystem::remove_all(d);
    auto writer = dataset_writer::create(d, {"x"});
    std::vector<std::uint8_t> payload(110 * 1024);
    std::mt19937_64 rng(1);
    for (std::uint64_t i = 0; i < records; ++i) {
      std::generate(payload.begin(), payload.end(),
                    [&] { return static_cast<std::uint8_t>(rng()); });
      (void)writer->append("img_" + std::to_string(i), 0, payload.data(), payload.size());
    }
    (void)writer->finish();
    return d;
  }();
  return dir;
}

void evict(const sharded_dataset& dataset) {
  for (const auto& s : dataset.manifest().shards) {
    int fd = ::open((dataset_dir() / s.file).c_str(), O_RDONLY);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// Times passes of `read_all` (which returns the payload bytes it read) over the dataset;
// with range(0) != 0 each pass starts cold, the eviction itself not timed.
template <class Pass>
void time_passes(benchmark::State& state, Pass read_all) {
  auto dataset = sharded_dataset::open(dataset_dir());
  bool cold = state.range(0) != 0;
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      evict(*dataset);
      state.ResumeTiming();
    }
    bytes += read_all(*dataset);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.SetLabel(cold ? "cold" : "warm");
}

void stream_all(benchmark::State& state) {
  time_passes(state, [](const sharded_dataset& dataset) {
    std::uint64_t bytes = 0;
    for (const auto& shard : dataset.shards()) {
      shard_stream stream(shard);
      for (auto r = stream.next(); r && r->has_value(); r = stream.next()) {
        bytes += (*r)->payload.size();
      }
    }
    return bytes;
  });
}

void random_access(benchmark::State& state) {
  std::vector<std::uint64_t> order(records);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(3));
  time_passes(state, [&](const sharded_dataset& dataset) {
    std::uint64_t bytes = 0;
    for (auto i : order) {
      bytes += dataset.read(i)->payload.size();
    }
    return bytes;
  });
}

BENCHMARK(stream_all)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(random_access)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
