#pragma once
/// What the actors of a running pipeline tell the code that hosts it (the node app or an
/// embedding trainer): the batcher's ledger figures, quarantined samples, and the first fatal
/// error, if any. A fatal error closes every trainer channel so no trainer waits forever.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/error.hpp"
#include "core/analysis/autotune.hpp"
#include "core/analysis/live_diagnosis.hpp"
#include "core/batching/epoch_ledger.hpp"
#include "core/batching/window_occupancy.hpp"
#include "core/delivery/batch_channel.hpp"
#include "core/metrics/latency_tracker.hpp"
#include "core/metrics/read_counts.hpp"

namespace conveyor {

struct pipeline_figures {
  epoch_summary totals;  ///< the batcher's ledger over every epoch
  std::vector<quarantine_entry> quarantined;
  std::uint64_t peak_in_flight = 0;
  std::uint64_t handoffs = 0;  ///< samples handed from a preprocessor to a straggler actor
  std::int64_t budget_ns = 0;  ///< the latest per-sample latency budget (0: no hand-off)
  bool finished = false;       ///< every epoch handed to the feeders
  std::uint64_t retries = 0;   ///< samples issued again (after a failure or a worker's death)
  std::vector<std::int64_t> step_ns;  ///< per transform step: total time over prepared samples
  std::uint64_t prepared = 0;         ///< samples whose steps step_ns sums
  std::uint64_t in_flight = 0;        ///< samples dispatched and not yet in a batch, now
  latency_snapshot sample_work;       ///< of the last prepared samples (batcher_core)
};

/// Thread-safe.
class pipeline_status {
 public:
  explicit pipeline_status(std::vector<std::shared_ptr<batch_channel>> channels)
      : channels_(std::move(channels)) {}

  void publish(pipeline_figures figures);
  /// publish(), keeping the quarantine list of the last publish(): cheap enough for every
  /// batch (`figures.quarantined` is ignored).
  void publish_progress(pipeline_figures figures);
  /// Records the first fatal error and closes every channel.
  void fail(error reason);
  /// Closes every channel (shutdown): from then on stopping() is true.
  void close_channels();
  /// Whether the pipeline is stopping (or failed): an actor waiting on work in another
  /// process looks at it between slices of its wait, and lets the work go.
  bool stopping() const noexcept { return stopping_.load(std::memory_order_acquire); }

  pipeline_figures figures() const;
  /// Transform steps executed, counted where they run: with no work done twice, this is
  /// samples x steps.
  void count_step() noexcept { steps_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t steps_executed() const noexcept { return steps_.load(std::memory_order_relaxed); }
  /// A sample was prepared (its steps done, wherever they ran): counted as it happens, for the
  /// autotuner's rate (the figures' `prepared` moves only when a batch goes out).
  void count_prepared() noexcept { prepared_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t prepared_now() const noexcept { return prepared_.load(std::memory_order_relaxed); }
  /// Hand-offs decided from the image header alone, before any step ran (early recognition).
  void count_early_handoff() noexcept { early_handoffs_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t early_handoffs() const noexcept {
    return early_handoffs_.load(std::memory_order_relaxed);
  }
  /// Where a sample's time goes beyond its transform steps: reading it, and copying it into
  /// its batch (collate), summed over samples.
  void add_read(std::int64_t ns) noexcept { read_ns_.fetch_add(ns, std::memory_order_relaxed); }
  void add_collate(std::int64_t ns, std::uint64_t samples) noexcept {
    collate_ns_.fetch_add(ns, std::memory_order_relaxed);
    collated_.fetch_add(samples, std::memory_order_relaxed);
  }
  std::int64_t read_ns() const noexcept { return read_ns_.load(std::memory_order_relaxed); }
  std::int64_t collate_ns() const noexcept { return collate_ns_.load(std::memory_order_relaxed); }
  std::uint64_t collated() const noexcept { return collated_.load(std::memory_order_relaxed); }
  /// A supervisor restarted a worker (counted once per restarted worker).
  void count_restart() noexcept { restarts_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t restarts() const noexcept { return restarts_.load(std::memory_order_relaxed); }
  /// A supervisor declared a worker hung.
  void count_hang() noexcept { hangs_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t hangs() const noexcept { return hangs_.load(std::memory_order_relaxed); }
  /// How long the window has been full, as the batcher tells it each time it acts (so that
  /// the live diagnosis sees a spell the moment it begins or ends, not at the next batch).
  void note_window(window_time t);
  window_time window() const;
  /// The live diagnosis (actors/diagnosis.hpp): `seconds` more of class `b`, in which the
  /// trainers took `samples`.
  void note_bottleneck(analysis::bottleneck b, double seconds, std::uint64_t samples);
  /// The time per class so far.
  analysis::bottleneck_tally bottlenecks() const;
  /// The live diagnosis's last interval: its figures and its line ("now prep-bound: in the
  /// last 1.0 s ..."), for /metrics (each pool's busy share) and the live page.
  void note_diagnosis(const analysis::interval_figures& f, std::string line);
  std::string diagnosis() const;
  /// The figures of the last interval noted; nullopt before the first.
  std::optional<analysis::interval_figures> last_interval() const;
  /// The autotuner's counts now (pipeline.autotune), after `changes` changes so far.
  void note_tuning(const analysis::tuning& counts, std::uint64_t changes);
  /// The autotuner's counts and changes so far; nullopt without autotune.
  std::optional<std::pair<analysis::tuning, std::uint64_t>> tuning() const;
  /// Each epoch's cache hits and storage reads (the readers count).
  read_counts& reads() noexcept { return reads_; }
  const read_counts& reads() const noexcept { return reads_; }
  std::optional<error> failure() const;
  const std::shared_ptr<batch_channel>& channel(int gpu) const {
    return channels_[static_cast<std::size_t>(gpu)];
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<batch_channel>> channels_;
  pipeline_figures figures_;
  std::optional<error> failure_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> steps_{0};
  std::atomic<std::uint64_t> prepared_{0};
  std::atomic<std::uint64_t> early_handoffs_{0};
  std::atomic<std::uint64_t> restarts_{0};
  std::atomic<std::uint64_t> hangs_{0};
  std::atomic<std::int64_t> read_ns_{0};
  std::atomic<std::int64_t> collate_ns_{0};
  std::atomic<std::uint64_t> collated_{0};
  read_counts reads_;
  analysis::bottleneck_tally bottlenecks_;  ///< guarded by mutex_
  mutable std::mutex window_mutex_;
  window_time window_;                                                ///< guarded by window_mutex_
  std::optional<std::pair<analysis::tuning, std::uint64_t>> tuning_;  ///< guarded by mutex_
  std::string diagnosis_;                                             ///< guarded by mutex_
  std::optional<analysis::interval_figures> interval_;                ///< guarded by mutex_
};

}  // namespace conveyor
