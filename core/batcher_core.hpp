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
#include <optional>
#include <string>
#include <vector>

#include "core/batch_policy.hpp"
#include "core/epoch_ledger.hpp"
#include "core/latency_budget.hpp"
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
  /// Preprocessors hand samples over budget to straggler actors (latency_aware with
  /// stragglers). The budget is learned from observed work times, unless fixed_budget_ns > 0.
  bool hand_off = false;
  latency_budget_settings budget;
  std::int64_t fixed_budget_ns = 0;
};

/// What preprocessors need to decide a hand-off: two integers (they may cross the wire).
struct budget_figures {
  std::int64_t budget_ns = latency_budget::no_hand_off;         ///< hand off once past this
  std::int64_t straggler_pixels = latency_budget::no_hand_off;  ///< hand off before decode
  bool operator==(const budget_figures& o) const noexcept {
    return budget_ns == o.budget_ns && straggler_pixels == o.straggler_pixels;
  }
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
  /// The sample is prepared: by preprocessor `worker`, or by a straggler actor (worker < 0).
  void on_prepared(prepared_ptr sample, int worker);
  /// Preprocessor `worker` handed a sample to a straggler actor: it is free for the next one.
  void on_handed_off(int worker);
  /// The budget preprocessors should use, when it changed since the last call; else nullopt.
  std::optional<budget_figures> take_budget_update();
  /// Worker `worker` (< 0: a straggler) could not prepare the sample: it is quarantined.
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
  std::uint64_t handoffs() const noexcept { return handoffs_; }
  const budget_figures& budget() const noexcept { return sent_budget_; }

 private:
  std::uint64_t gpu_count() const noexcept { return static_cast<std::uint64_t>(settings_.gpus); }
  void roll_epoch();
  bool next_ticket(sample_ticket& out);
  int least_loaded_worker() const;
  void record_delivery(const batch_plan& plan);
  void free_worker(int worker);
  budget_figures current_budget() const;

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
  latency_budget budget_;
  budget_figures sent_budget_;
  std::uint64_t handoffs_ = 0;
};

}  // namespace conveyor
