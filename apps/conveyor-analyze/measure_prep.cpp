#include "apps/conveyor-analyze/measure_prep.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace conveyor {
namespace {

using clock = std::chrono::steady_clock;

double percentile(std::vector<double> values, double p) {
  if (values.empty()) {
    return 0;
  }
  auto at = static_cast<std::size_t>(p / 100.0 * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(at), values.end());
  return values[at];
}

// What one thread ran: per sample its total, per step the sum.
struct worker_tally {
  std::vector<double> sample_ms;
  std::vector<double> step_ms;
};

void run_worker(const transform_chain& chain, const std::vector<record>& samples,
                std::atomic<std::uint64_t>& next, worker_tally& tally, const progress_fn& progress,
                std::mutex& progress_mutex) {
  tally.step_ms.assign(chain.size(), 0.0);
  for (std::uint64_t i = next++; i < samples.size(); i = next++) {
    sample_state s;
    s.sample_id = i;
    s.key = samples[i].key;
    s.encoded = samples[i].payload;
    (void)chain.run_all(s);
    double total = 0;
    for (std::size_t k = 0; k < s.step_ns.size(); ++k) {
      const double ms = static_cast<double>(s.step_ns[k]) / 1e6;
      tally.step_ms[k] += ms;
      total += ms;
    }
    tally.sample_ms.push_back(total);
    if (progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      progress(i + 1);
    }
  }
}

sample_costs costs_of(const transform_chain& chain, const std::vector<worker_tally>& tallies) {
  std::vector<double> all;
  std::vector<double> steps(chain.size(), 0.0);
  for (const auto& t : tallies) {
    all.insert(all.end(), t.sample_ms.begin(), t.sample_ms.end());
    for (std::size_t k = 0; k < steps.size(); ++k) {
      steps[k] += t.step_ms[k];
    }
  }
  sample_costs c;
  const double n = std::max<double>(1.0, static_cast<double>(all.size()));
  for (double v : all) {
    c.mean_ms += v / n;
  }
  c.p50_ms = percentile(all, 50);
  c.p90_ms = percentile(all, 90);
  c.p99_ms = percentile(all, 99);
  c.max_ms = all.empty() ? 0 : *std::max_element(all.begin(), all.end());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    c.step_mean_ms.emplace_back(std::string(chain.step(k).name()), steps[k] / n);
  }
  return c;
}

}  // namespace

std::vector<record> load_samples(const sample_source& source, std::uint64_t count) {
  std::vector<record> out;
  const std::uint64_t n = source.size();
  count = std::min(count, n);
  for (std::uint64_t i = 0; i < count; ++i) {
    if (auto r = source.read(i * n / count)) {
      out.push_back(std::move(*r));
    }
  }
  return out;
}

double chain_rate(const transform_chain& chain, const std::vector<record>& samples, int workers,
                  sample_costs* costs, const progress_fn& progress) {
  std::atomic<std::uint64_t> next{0};
  std::mutex progress_mutex;
  std::vector<worker_tally> tallies(static_cast<std::size_t>(workers));
  const auto start = clock::now();
  std::vector<std::thread> threads;
  for (auto& t : tallies) {
    threads.emplace_back(
        [&, tally = &t] { run_worker(chain, samples, next, *tally, progress, progress_mutex); });
  }
  for (auto& t : threads) {
    t.join();
  }
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();
  if (costs != nullptr) {
    *costs = costs_of(chain, tallies);
  }
  return static_cast<double>(samples.size()) / seconds;
}

}  // namespace conveyor
