#pragma once
/// The node app's stand-in for a GPU trainer: per GPU, a thread that takes each batch, spends
/// `step` on it without using the CPU, and gives it back. It measures its wait for every
/// batch (the data stall) and checks, independently of the pipeline, what it received.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "apps/conveyor-node/delivery_audit.hpp"
#include "apps/conveyor-node/stop_token.hpp"
#include "conveyor/pipeline.hpp"
#include "core/batching/epoch_ledger.hpp"

namespace conveyor {

/// What all trainers of a run saw. Thread-safe.
class training_record {
 public:
  training_record(std::uint64_t dataset_size, std::uint64_t epochs);

  void add_batch(const batch& b, std::chrono::nanoseconds waited);
  void add_step(std::chrono::nanoseconds stepped);
  /// A GPU finished epoch `epoch` at `when`; the epoch ends with the last GPU.
  void end_epoch(std::uint64_t epoch, std::chrono::steady_clock::time_point when);

  struct totals {
    std::uint64_t samples = 0;
    std::uint64_t batches = 0;
    double stall_s = 0;
    double step_s = 0;
    epoch_summary ledger;
    /// Since `start`, when the last GPU finished each epoch; only the epochs that ended.
    std::vector<double> epoch_end_s;
    std::vector<double> epoch_stall_s;  ///< the trainers' waits for each epoch's batches
    /// MB the process read from storage devices between epoch ends (process_io.hpp); only the
    /// epochs that ended.
    std::vector<double> epoch_disk_mb;
  };
  totals summarize(std::chrono::steady_clock::time_point start) const;

 private:
  mutable std::mutex mutex_;
  std::uint64_t epochs_;
  epoch_ledger ledger_;
  std::uint64_t samples_ = 0;
  std::uint64_t batches_ = 0;
  std::chrono::nanoseconds stall_{0};
  std::chrono::nanoseconds step_{0};
  std::vector<std::chrono::nanoseconds> epoch_stall_;
  std::vector<std::chrono::steady_clock::time_point> epoch_end_;
  std::uint64_t disk_at_start_ = 0;
  std::vector<std::uint64_t> disk_at_end_;  ///< read_bytes when each epoch ended
};

/// Trains GPU `gpu` through every epoch of `p`; `on_batch` is called after each batch (for a
/// progress bar), and each batch received goes into `audit` first, when there is one. Returns
/// when the last epoch ends, the pipeline stops, or `stop` is requested (then at once: a
/// simulated step in progress is cut short and the batch is given back).
void run_simulated_trainer(pipeline& p, int gpu, std::chrono::nanoseconds step,
                           training_record& record, delivery_audit* audit,
                           const std::function<void()>& on_batch, stop_token& stop);

}  // namespace conveyor
