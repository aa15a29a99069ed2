// What resuming costs at ImageNet's size (1,281,167 samples): recording a batch of 64 as a
// trainer receives it (on every next()), and taking the state mid-epoch (the epoch's order,
// ids to positions, the blob) after half an epoch delivered in the order of the epoch with a
// latency-aware window's worth of reordering. The blob's size is reported as a counter.
//   build/bench/bench_resume_state   (figures: bench/results/resume_cost.md)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>

#include "core/batching/delivery_tracker.hpp"
#include "core/batching/epoch_order.hpp"

namespace {

using conveyor::delivery_tracker;
using conveyor::resume_state;

constexpr std::uint64_t imagenet = 1281167;
constexpr std::uint64_t batch = 64;

resume_state fresh() {
  return {imagenet, 7, conveyor::sample_order::shuffled(true), 90, 0, {}};
}

// The ids of the first `n` positions of epoch 0, shuffled within windows of 512 (what
// latency-aware batching does to the order).
std::vector<std::uint64_t> delivered_ids(std::uint64_t n) {
  auto order = conveyor::epoch_order(imagenet, 7, 0);
  order.resize(n);
  std::mt19937_64 rng(1);
  for (std::size_t at = 0; at + 512 <= order.size(); at += 512) {
    std::shuffle(order.begin() + static_cast<std::ptrdiff_t>(at),
                 order.begin() + static_cast<std::ptrdiff_t>(at + 512), rng);
  }
  return order;
}

void BM_RecordBatch(benchmark::State& state) {
  delivery_tracker t(fresh(), 8);
  const auto ids = delivered_ids(batch * 1024);
  std::size_t at = 0;
  for (auto _ : state) {
    std::vector<std::uint64_t> b(ids.begin() + static_cast<std::ptrdiff_t>(at),
                                 ids.begin() + static_cast<std::ptrdiff_t>(at + batch));
    t.record(0, 0, b, false);
    at = (at + batch) % ids.size();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch));
}
BENCHMARK(BM_RecordBatch);

void BM_StateMidEpoch(benchmark::State& state) {
  delivery_tracker t(fresh(), 8);
  const auto ids = delivered_ids(imagenet / 2);
  for (std::size_t at = 0; at < ids.size(); at += batch) {
    auto end = std::min(ids.size(), at + batch);
    t.record(0, 0,
             {ids.begin() + static_cast<std::ptrdiff_t>(at),
              ids.begin() + static_cast<std::ptrdiff_t>(end)},
             false);
  }
  std::size_t bytes = 0;
  for (auto _ : state) {
    bytes = encode(t.state()).size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["state_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_StateMidEpoch)->Unit(benchmark::kMillisecond);

// The first state of an epoch computes the epoch's order too (then kept for the epoch).
void BM_FirstStateOfAnEpoch(benchmark::State& state) {
  const auto ids = delivered_ids(batch);
  for (auto _ : state) {
    state.PauseTiming();
    delivery_tracker t(fresh(), 8);
    t.record(0, 0, ids, false);
    state.ResumeTiming();
    benchmark::DoNotOptimize(encode(t.state()).size());
  }
}
BENCHMARK(BM_FirstStateOfAnEpoch)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
