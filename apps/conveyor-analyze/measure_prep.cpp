#include "apps/conveyor-analyze/measure_prep.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "core/delivery/batch_channel.hpp"

namespace conveyor {
namespace {

using clock = std::chrono::steady_clock;

/// The value at percentile `p` of `sorted` (ascending, not empty).
double percentile(const std::vector<double>& sorted, double p) {
  return sorted[static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1))];
}

/// The costs of per-sample totals `sample_ms` and per-step sums `step_ms`.
sample_costs costs_of(const transform_chain& chain, std::vector<double> sample_ms,
                      const std::vector<double>& step_ms) {
  sample_costs c;
  const double n = std::max<double>(1.0, static_cast<double>(sample_ms.size()));
  for (double v : sample_ms) {
    c.mean_ms += v / n;
  }
  std::sort(sample_ms.begin(), sample_ms.end());
  if (!sample_ms.empty()) {
    c.p50_ms = percentile(sample_ms, 50);
    c.p90_ms = percentile(sample_ms, 90);
    c.p99_ms = percentile(sample_ms, 99);
    c.max_ms = sample_ms.back();
  }
  for (std::size_t k = 0; k < step_ms.size(); ++k) {
    c.step_mean_ms.emplace_back(std::string(chain.step(k).name()), step_ms[k] / n);
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

sample_costs chain_costs(const transform_chain& chain, const std::vector<record>& samples,
                         const progress_fn& progress) {
  std::vector<double> sample_ms;
  std::vector<double> step_ms(chain.size(), 0.0);
  for (std::uint64_t i = 0; i < samples.size(); ++i) {
    sample_state s;
    s.sample_id = i;
    hold_record(s, samples[i]);
    chain.start(s, samples[i].label);
    (void)chain.run_all(s);
    double total = 0;
    for (std::size_t k = 0; k < s.step_ns.size(); ++k) {
      const double ms = static_cast<double>(s.step_ns[k]) / 1e6;
      step_ms[k] += ms;
      total += ms;
    }
    sample_ms.push_back(total);
    if (progress) {
      progress(i + 1);
    }
  }
  return costs_of(chain, std::move(sample_ms), step_ms);
}

progress_fn serialized(progress_fn progress) {
  if (!progress) {
    return {};
  }
  auto mutex = std::make_shared<std::mutex>();
  return [mutex, progress = std::move(progress)](std::uint64_t done) {
    std::lock_guard<std::mutex> lock(*mutex);
    progress(done);
  };
}

namespace {

// A trainer that takes no time: every batch of every epoch of GPU `gpu`, given back at once;
// the samples it took.
std::uint64_t take_everything(pipeline_runtime& rt, int gpu, std::uint64_t epochs) {
  std::uint64_t samples = 0;
  for (std::uint64_t ended = 0; ended < epochs;) {
    auto got = rt.status()->channel(gpu)->pop_until(clock::now() + rt.spec().next_timeout);
    if (got.status != batch_channel::outcome::ready) {
      break;  // closed (a failure) or nothing in next_timeout: the rate says it
    }
    samples += got.batch->size();
    ended += got.batch->last_in_epoch ? 1 : 0;
    rt.release(gpu, got.batch->slot);
  }
  return samples;
}

}  // namespace

double pipeline_rate(pipeline_spec spec, std::shared_ptr<const sample_source> source,
                     const transform_chain& chain, int workers, std::uint64_t epochs,
                     const progress_fn& progress) {
  spec.source = std::move(source);
  spec.chain = chain;
  spec.settings.workers = workers;
  spec.settings.epochs = epochs;
  spec.settings.resume.reset();
  spec.settings.share = {};
  spec.cache = nullptr;
  spec.peers.reset();
  spec.monitor_interval = std::chrono::milliseconds(0);
  spec.quarantine = nullptr;
  spec.cuda_devices.clear();
  spec.host_engine.reset();
  spec.faults = {};
  const auto start = clock::now();
  pipeline_runtime rt(std::move(spec));
  std::atomic<std::uint64_t> taken{0};
  std::vector<std::thread> trainers;
  const auto report = serialized(progress);  // each trainer thread reports
  for (int g = 0; g < rt.spec().settings.gpus; ++g) {
    trainers.emplace_back([&, g] {
      taken += take_everything(rt, g, epochs);
      if (report) {
        report(taken.load());
      }
    });
  }
  for (auto& t : trainers) {
    t.join();
  }
  return static_cast<double>(taken.load()) /
         std::chrono::duration<double>(clock::now() - start).count();
}

}  // namespace conveyor
