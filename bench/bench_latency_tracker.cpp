// latency_tracker on the hot path: record() alone, record() + percentile(90) per sample (the
// batcher's budget check), bursts of records between queries (where the lazy repair gives way
// to a re-sort), and the two obvious alternatives for comparison: re-sorting a copy whenever a
// record made it stale, and an order-statistics tree (GNU pb_ds, O(log N) per change).
#include <benchmark/benchmark.h>
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>
#include <utility>

#include "core/metrics/latency_tracker.hpp"

namespace {

using conveyor::latency_tracker;

// Log-normal latencies around 5 ms (ns), like a preprocessing step with a long tail.
const std::vector<std::int64_t>& latencies() {
  static const auto values = [] {
    std::vector<std::int64_t> v(1 << 16);
    std::mt19937_64 rng(3);
    std::lognormal_distribution<double> dist(std::log(5e6), 0.5);
    for (auto& x : v) {
      x = static_cast<std::int64_t>(dist(rng));
    }
    return v;
  }();
  return values;
}

template <class Tracker>
void fill(Tracker& t, std::size_t n) {
  const auto& v = latencies();
  for (std::size_t i = 0; i < n; ++i) {
    t.record(v[i % v.size()]);
  }
}

// The shared loop: a tracker filled to its window, then per iteration `burst` records and one
// `query`; items = records, so ns/item is the amortised cost per record.
template <class Tracker, class Query>
void record_and_query(benchmark::State& state, std::size_t burst, Query query) {
  const auto window = static_cast<std::size_t>(state.range(0));
  Tracker t(window);
  fill(t, window);
  const auto& v = latencies();
  std::size_t i = 0;
  for (auto _ : state) {
    for (std::size_t k = 0; k < burst; ++k) {
      t.record(v[i++ & (v.size() - 1)]);
    }
    query(t);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(burst));
}

void record_only(benchmark::State& state) {
  record_and_query<latency_tracker>(
      state, 1, [](latency_tracker& t) { benchmark::DoNotOptimize(t.count()); });
}

// The pattern of a per-sample budget check.
template <class Tracker>
void record_then_p90(benchmark::State& state) {
  record_and_query<Tracker>(state, 1,
                            [](Tracker& t) { benchmark::DoNotOptimize(t.percentile(90.0)); });
}

// `burst` records, then one query.
void record_burst_then_p90(benchmark::State& state) {
  record_and_query<latency_tracker>(
      state, static_cast<std::size_t>(state.range(1)),
      [](latency_tracker& t) { benchmark::DoNotOptimize(t.percentile(90.0)); });
}

// One record, then the whole log line.
void record_then_snapshot(benchmark::State& state) {
  record_and_query<latency_tracker>(
      state, 1, [](latency_tracker& t) { benchmark::DoNotOptimize(t.snapshot()); });
}

// Alternative 1: a ring plus a sorted copy rebuilt by std::sort whenever a record made it stale.
class resort_tracker {
 public:
  explicit resort_tracker(std::size_t window) : window_(window) {}
  void record(std::int64_t v) {
    ring_.push_back(v);
    if (ring_.size() > window_) {
      ring_.pop_front();
    }
    stale_ = true;
  }
  std::int64_t percentile(double p) {
    if (stale_) {
      sorted_.assign(ring_.begin(), ring_.end());
      std::sort(sorted_.begin(), sorted_.end());
      stale_ = false;
    }
    const auto n = sorted_.size();
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
    return sorted_[std::clamp<std::size_t>(rank, 1, n) - 1];
  }

 private:
  std::size_t window_;
  std::deque<std::int64_t> ring_;
  std::vector<std::int64_t> sorted_;
  bool stale_ = true;
};

// Alternative 2: an order-statistics tree of (value, sequence) kept up to date on every record.
class tree_tracker {
 public:
  explicit tree_tracker(std::size_t window) : window_(window) {}
  void record(std::int64_t v) {
    ring_.emplace_back(v, seq_++);
    tree_.insert(ring_.back());
    if (ring_.size() > window_) {
      tree_.erase(ring_.front());
      ring_.pop_front();
    }
  }
  std::int64_t percentile(double p) {
    const auto n = tree_.size();
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
    return tree_.find_by_order(std::clamp<std::size_t>(rank, 1, n) - 1)->first;
  }

 private:
  using entry = std::pair<std::int64_t, std::uint64_t>;
  std::size_t window_;
  std::uint64_t seq_ = 0;
  std::deque<entry> ring_;
  __gnu_pbds::tree<entry, __gnu_pbds::null_type, std::less<entry>, __gnu_pbds::rb_tree_tag,
                   __gnu_pbds::tree_order_statistics_node_update>
      tree_;
};

BENCHMARK(record_only)->Arg(1024)->Arg(8192);
BENCHMARK_TEMPLATE(record_then_p90, latency_tracker)->Arg(1024)->Arg(8192);
BENCHMARK_TEMPLATE(record_then_p90, resort_tracker)->Arg(1024)->Arg(8192);
BENCHMARK_TEMPLATE(record_then_p90, tree_tracker)->Arg(1024)->Arg(8192);
BENCHMARK(record_then_snapshot)->Arg(1024)->Arg(8192);
BENCHMARK(record_burst_then_p90)
    ->ArgsProduct({{1024, 8192}, {16, 64, 128, 256, 1024, 8192}})
    ->ArgNames({"window", "burst"});

}  // namespace

BENCHMARK_MAIN();
