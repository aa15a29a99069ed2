#pragma once
/// The batcher's logic, without actors: it walks the sampler's order epoch after epoch,
/// dispatches samples to preprocessors within the credit window, hands prepared samples to the
/// batching policy, sends batches to feeders that have credit, and keeps the epoch ledger.
///
/// Credits, end to end: at most `window_samples` samples are in flight, counted from dispatch
/// until the trainer releases the batch that holds them (or until they are quarantined); each
/// preprocessor holds at most `per_worker_limit` of them; each feeder holds at most the
/// batches it granted credit for. Memory is bounded by configuration, whatever the speeds.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/batch_policy.hpp"
#include "core/epoch_ledger.hpp"
#include "core/prepared_sample.hpp"

namespace conveyor {

struct batcher_settings {
  std::uint64_t dataset_size = 0;
  std::uint64_t seed = 0;
  bool shuffle = true;
  std::uint64_t epochs = 1;
  std::uint64_t batch_size = 64;
  int gpus = 1;
  int workers = 1;                     ///< preprocessors
  std::uint64_t per_worker_limit = 2;  ///< samples queued at one preprocessor
  std::uint64_t window_samples = 0;    ///< samples in flight, dispatch to release
};

/// Send `ticket` to preprocessor `worker` (through a reader).
struct dispatch_order {
  sample_ticket ticket;
  int worker = 0;
};

/// Single-threaded (owned by the batcher actor).
class batcher_core {
 public:
  batcher_core(batcher_settings settings, std::unique_ptr<batch_policy> policy);

  /// Samples to dispatch now, as far as the window and the workers' limits allow.
  std::vector<dispatch_order> take_dispatches();
  /// Worker `worker` finished the sample.
  void on_prepared(prepared_ptr sample, int worker);
  /// Worker `worker` could not prepare the sample: it is quarantined with `reason`.
  void on_failed(const sample_ticket& ticket, int worker, std::string key, std::string reason);
  /// Feeder `gpu` grants credit for `batches` more batches.
  void on_credit(int gpu, std::uint64_t batches);
  /// The trainer of `gpu` released a batch of `samples` samples: they leave the window.
  void on_released(std::uint64_t samples);
  /// Batches to send to feeders now; each one used a credit of its GPU.
  std::vector<batch_plan> take_batches();

  /// Every epoch has been handed to the feeders, last_in_epoch markers included.
  bool finished() const noexcept { return ended_epochs_ == settings_.epochs * gpu_count(); }
  const epoch_ledger& ledger() const noexcept { return ledger_; }
  const batcher_settings& settings() const noexcept { return settings_; }
  std::uint64_t in_flight() const noexcept { return in_flight_; }
  std::uint64_t peak_in_flight() const noexcept { return peak_in_flight_; }
  std::string_view policy_name() const noexcept { return policy_->name(); }

 private:
  std::uint64_t gpu_count() const noexcept { return static_cast<std::uint64_t>(settings_.gpus); }
  void roll_epoch();
  bool next_ticket(sample_ticket& out);
  int least_loaded_worker() const;
  void record_delivery(const batch_plan& plan);

  batcher_settings settings_;
  std::unique_ptr<batch_policy> policy_;
  epoch_ledger ledger_;
  std::vector<std::uint64_t> order_;  ///< the sampler order of epoch begun_ - 1
  std::uint64_t begun_ = 0;           ///< epochs begun so far
  std::uint64_t position_ = 0;        ///< next position of order_ to dispatch
  std::vector<std::uint64_t> worker_load_;
  std::vector<std::uint64_t> credits_;
  std::uint64_t in_flight_ = 0;
  std::uint64_t peak_in_flight_ = 0;
  std::uint64_t ended_epochs_ = 0;  ///< (gpu, epoch) pairs whose last batch went out
};

}  // namespace conveyor
