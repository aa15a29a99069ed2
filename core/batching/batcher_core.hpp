#pragma once
/// The batcher's logic, without actors: it walks the sampler's order epoch after epoch,
/// dispatches samples to preprocessors within the credit window, hands prepared samples to the
/// batching policy, sends batches to feeders that have credit, and keeps the epoch ledger.
///
/// Credits, end to end: at most `window_samples` samples are in flight, counted from dispatch
/// until the trainer releases the batch that holds them (or until they are quarantined); each
/// preprocessor holds at most `per_worker_limit` of them; each feeder holds at most the
/// batches it granted credit for. Memory is bounded by configuration, whatever the speeds.
///
/// Hand-offs take permits, too: a preprocessor hands a sample off only while it holds a permit
/// (at most one at a time; the hand-off uses it up), and permits out plus handed-off samples
/// not yet finished never exceed handoff_limit(): the smaller of `handoff_share` of the window
/// and what the straggler actors that are up can start soon (each one the sample it works on
/// plus `straggler_backlog` waiting). Without a permit a preprocessor finishes the sample
/// itself, so slow straggler actors (a busy machine) never fill the window with hand-offs.
///
/// Nothing is lost: every attempt is recorded until its result arrives. When a worker dies,
/// the attempts it held are re-issued to the others (the sample it was working on is charged
/// a failure); a failed sample is retried up to `max_sample_retries` times, then quarantined.
/// A result from an attempt that was given up on is stale and ignored: nothing is delivered
/// twice.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/batching/batch_policy.hpp"
#include "core/batching/budget_figures.hpp"
#include "core/batching/epoch_ledger.hpp"
#include "core/batching/epoch_share.hpp"
#include "core/batching/flight_table.hpp"
#include "core/batching/latency_budget.hpp"
#include "core/batching/prepared_sample.hpp"
#include "core/batching/resume_state.hpp"
#include "core/batching/window_occupancy.hpp"
#include "core/metrics/latency_tracker.hpp"

namespace conveyor {

struct batcher_settings {
  std::uint64_t dataset_size = 0;
  std::uint64_t seed = 0;
  sample_order order{};  ///< dataset.shuffle: how each epoch's order is drawn
  std::uint64_t epochs = 1;
  std::uint64_t batch_size = 64;
  int gpus = 1;
  int workers = 1;  ///< preprocessors
  int readers = 1;
  int stragglers = 0;                    ///< straggler actors (used when hand_off is set)
  std::uint32_t max_sample_retries = 2;  ///< attempts after the first before quarantine
  std::uint64_t per_worker_limit = 2;    ///< samples queued at one preprocessor
  std::uint64_t window_samples = 0;      ///< samples in flight, dispatch to release
  /// Preprocessors hand samples over budget to straggler actors (latency_aware with
  /// stragglers). The budget is learned from observed work times, unless fixed_budget_ns > 0.
  bool hand_off = false;
  double handoff_share = 0.25;          ///< of window_samples, at most held by hand-offs
  std::uint64_t straggler_backlog = 1;  ///< waiting at one straggler actor beyond its current
  latency_budget_settings budget;
  std::int64_t fixed_budget_ns = 0;
  /// Resumes a run (resume_state.hpp): begins at its first epoch, and in each epoch it has
  /// begun dispatches only the positions it had not delivered (the ledger counts those as
  /// delivered), in the order they come. Null: from the start. It must be of this run.
  std::shared_ptr<const resume_state> resume{};
  /// This node's share of each epoch ([cluster]); by default the whole epoch.
  epoch_share share{};
  /// latency_aware: batches of one length bucket (`batching.bucket_by`); none by default.
  bucketing buckets{};
};

/// The credit window of a pipeline of `s` (batch_size, gpus, workers, per_worker_limit,
/// buckets) under `policy`: `prefetch_batches` + 1 batches per GPU; with buckets, room for
/// what can wait in buckets that are not full (buckets x (batch_size - 1) samples), so that
/// bucketed batches rarely need mixing for lack of room; and the pool's lookahead, a multiple
/// of what the preprocessors hold (workers x per_worker_limit): those samples count against
/// the window, and the pool goes on finishing later ones while the oldest batch waits for its
/// slowest sample. latency_aware lets fast samples pass, so twice what they hold is enough;
/// in_order holds every later sample until the oldest batch is complete, and needs six times
/// (bench/results/scaling_model.md: 16 preprocessors, a tail of samples 5x the mean, reach
/// 0.98 of the pool's rate from about 200 samples of lookahead whatever the batch size; with
/// the batches alone, 0.90 at batch 64 and 0.14 at batch 2, where the window of 6 samples
/// could never keep 16 workers busy).
std::uint64_t default_window(std::uint64_t prefetch_batches, batching_policy policy,
                             const batcher_settings& s);

/// Send `ticket` to preprocessor `worker` through reader `reader`.
struct dispatch_order {
  sample_ticket ticket;
  int worker = 0;
  int reader = 0;
};

/// What became of a failed attempt: `filtered` when the recipe's filter left the sample out.
enum class failure_outcome : std::uint8_t { stale, retried, quarantined, filtered };

/// Where a handed-off sample goes: a straggler actor's index, or one of these.
inline constexpr int stale_handoff = -1;  ///< the attempt was given up on: drop it
inline constexpr int no_straggler = -2;   ///< none is up now: keep it and ask again later

/// Single-threaded (owned by the batcher actor).
class batcher_core {
 public:
  /// Names a sample by its dataset index (file, or shard and record) in quarantine entries.
  using sample_namer = std::function<std::string(std::uint64_t)>;

  batcher_core(batcher_settings settings, std::unique_ptr<batch_policy> policy,
               sample_namer name = {});

  /// Samples to dispatch now: re-issued ones first, then new ones as far as the window, the
  /// workers' limits and the workers that are up allow.
  std::vector<dispatch_order> take_dispatches();
  /// The sample is prepared (by its preprocessor or a straggler actor). False when the result
  /// is stale: it was ignored.
  bool on_prepared(prepared_ptr sample);
  /// The sample's preprocessor handed it off: it is free for the next one. False when stale.
  bool on_handed_off(const sample_ticket& ticket);
  /// The straggler actor that is to finish a handed-off sample (and now holds it), or
  /// stale_handoff, or no_straggler (ask again after a straggler comes up).
  int route_handoff(const sample_ticket& ticket);
  /// The budget preprocessors should use, when it changed since the last call; else nullopt.
  std::optional<budget_figures> take_budget_update();
  /// Preprocessors to send a hand-off permit to now (each now holds one).
  std::vector<int> take_permits();
  /// Hand-offs and permits out now may not exceed this (0 without hand-offs).
  std::uint64_t handoff_limit() const;
  /// Handed-off samples not finished yet.
  std::uint64_t handed_out() const noexcept { return handed_out_; }
  /// The attempt failed: the sample is retried, or quarantined once its retries are spent
  /// (named by the sample namer: its file, or its shard and record).
  failure_outcome on_failed(const sample_ticket& ticket, std::string reason);
  /// The recipe's filter left the sample out (errc::filtered): it leaves the window and the
  /// ledger counts it filtered, in this epoch and, without being read again, in every later
  /// one (a filter decides from the sample's bytes, which do not change).
  failure_outcome on_filtered(const sample_ticket& ticket);
  /// Worker `index` of `role` died (or hung): the attempts it held are re-issued, and
  /// `culprit` (the attempt it was working on, 0 if none) is charged a failure with `reason`.
  /// A reader takes its attempts in the order they were dispatched, so those up to
  /// `done_through` (the last one it completed) went on to their preprocessors and are not
  /// lost: only the rest is re-issued. Nothing is dispatched to it until on_worker_up.
  /// Returns how many attempts it held.
  std::size_t on_worker_down(worker_role role, int index, std::uint64_t culprit,
                             const std::string& reason, std::uint64_t done_through = 0);
  /// Worker `index` of `role` is (back) up and holds nothing.
  void on_worker_up(worker_role role, int index);
  /// Autotune (core/analysis/autotune.hpp): only the first `count` workers of `role` (those
  /// of them that are up) get work, permits and hand-offs from now on; the others finish what
  /// they hold. Clamped to [1, spawned] (straggler actors [0, spawned]). All are active at first.
  void set_active(worker_role role, int count);
  int active(worker_role role) const noexcept { return active_[static_cast<std::size_t>(role)]; }
  /// Autotune: at most `samples` (>= 1) in flight from now on; those in flight beyond it stay
  /// until their batch is released.
  void set_window(std::uint64_t samples);
  /// Feeder `gpu` grants credit for `batches` more batches.
  void on_credit(int gpu, std::uint64_t batches);
  /// The trainer of `gpu` released a batch of `samples` samples: they leave the window.
  void on_released(std::uint64_t samples);
  /// Batches to send to feeders now; each one used a credit of its GPU. The GPUs with credit
  /// take turns, one batch each, the one furthest behind first (fewest epochs ended, then
  /// fewest batches of its current epoch): while samples come slower than the trainers ask,
  /// a GPU whose credit comes back first must not take every batch (latency_aware hands the
  /// next batch to whichever GPU asks), or it would finish its share of the epoch while the
  /// others wait for theirs, then wait itself for the next epoch (issue 50: the UNet3D first
  /// epoch at 2 GPUs). in_order names each batch's GPU itself, so there the turns change
  /// nothing.
  std::vector<batch_plan> take_batches();

  /// Samples the readers will be handed soon, for a dataset that reads ahead (an object
  /// store's: sample_source::will_read): those of the current epoch's order up to `ahead`
  /// positions past the next one to dispatch that were not told before (the first dispatches
  /// of an epoch included), with their epoch. In blocks (sample_order), at least through the
  /// span after the one of the next position: each span's samples are told at once, a span
  /// ahead, so that its blocks are fetched whole, and before the readers reach them. Within
  /// one epoch: the next one's are told once it begins.
  struct read_ahead_batch {
    std::uint64_t epoch = 0;
    std::vector<std::uint64_t> ids;
  };
  read_ahead_batch take_read_ahead(std::uint64_t ahead);

  /// Every epoch has been handed to the feeders, last_in_epoch markers included.
  bool finished() const noexcept { return ended_epochs_ == settings_.epochs * gpu_count(); }
  const epoch_ledger& ledger() const noexcept { return ledger_; }
  const batcher_settings& settings() const noexcept { return settings_; }
  std::uint64_t in_flight() const noexcept { return in_flight_; }
  std::uint64_t peak_in_flight() const noexcept { return peak_in_flight_; }
  /// How long the window has been full (every credit held), up to the last change.
  window_time window_full() const noexcept { return occupancy_.time(); }
  std::string_view policy_name() const noexcept { return policy_->name(); }
  std::uint64_t handoffs() const noexcept { return handoffs_; }
  std::uint64_t retries() const noexcept { return retries_; }
  /// Distinct samples the recipe's filter left out (each counted once, not per epoch).
  std::uint64_t filtered_samples() const noexcept { return filtered_samples_; }
  /// Per transform step, the total time of every prepared sample's step (wherever it ran).
  const std::vector<std::int64_t>& step_ns() const noexcept { return step_ns_; }
  /// Percentiles of the work (all steps, wherever they ran) of the last 8192 prepared samples.
  latency_snapshot sample_work() const { return sample_work_.snapshot(); }
  std::uint64_t prepared() const noexcept { return prepared_; }
  std::uint64_t stale_results() const noexcept { return stale_; }
  bool is_up(worker_role role, int index) const;
  const budget_figures& budget() const noexcept { return sent_budget_; }

 private:
  std::uint64_t gpu_count() const noexcept { return static_cast<std::uint64_t>(settings_.gpus); }
  void roll_epoch();
  void keep_what_is_due(std::uint64_t epoch);
  bool next_ticket(sample_ticket& out);
  int least_loaded_worker() const;
  int next_reader();
  bool dispatch_one(sample_ticket ticket, std::uint32_t failures, std::vector<dispatch_order>& out);
  void record_delivery(const batch_plan& plan);
  std::optional<flight> finish(const sample_ticket& ticket);
  void free_holder(const flight& f);
  void drop_permit(int worker);
  void reissue(flight f);
  failure_outcome charge_failure(flight f, std::string reason);
  /// The sample of `ticket` is left out of its epoch (a filter's decision).
  void leave_out(const sample_ticket& ticket);
  /// span_ends_ of order_, epoch `epoch`'s.
  void mark_spans(std::uint64_t epoch);
  /// The position of order_ take_read_ahead tells through (exclusive), `ahead` past the next.
  std::uint64_t read_ahead_end(std::uint64_t ahead) const;
  budget_figures current_budget() const;
  std::vector<bool>& up(worker_role role) { return up_[static_cast<std::size_t>(role)]; }
  /// Up and active: may be given work.
  bool usable(worker_role role, std::size_t index) const noexcept;

  batcher_settings settings_;
  sample_namer name_;
  std::unique_ptr<batch_policy> policy_;
  epoch_ledger ledger_;
  /// The sampler order of epoch begun_ - 1: this node's share, without what a resumed run had
  /// delivered
  std::vector<std::uint64_t> order_;
  /// Blocks: where each span of order_ ends (positions, ascending); empty otherwise.
  std::vector<std::uint64_t> span_ends_;
  std::uint64_t begun_ = 0;        ///< epochs begun so far (those before a resume's first included)
  std::uint64_t position_ = 0;     ///< next position of order_ to dispatch
  std::uint64_t told_ = 0;         ///< positions of order_ told to take_read_ahead's caller
  std::uint64_t told_epochs_ = 0;  ///< begun_ when told_ was last set
  std::vector<std::uint64_t> worker_load_;
  std::vector<std::uint64_t> straggler_load_;
  std::vector<bool> up_[worker_role_count];
  int active_[worker_role_count] = {};  ///< per role: workers below this index get work
  std::vector<bool> permit_held_;       ///< per preprocessor
  std::uint64_t handed_out_ = 0;
  std::size_t next_permit_ = 0;  ///< round robin start of the next grant
  std::size_t next_reader_ = 0;
  flight_table flights_;
  std::vector<flight> reissued_;  ///< oldest first; dispatched before new samples
  std::uint64_t next_attempt_ = 1;
  std::uint64_t retries_ = 0;
  std::vector<bool> filtered_;  ///< by sample id: the recipe's filter left it out
  std::uint64_t filtered_samples_ = 0;
  std::vector<std::int64_t> step_ns_;
  mutable latency_tracker sample_work_{8192};  ///< mutable: its queries sort lazily
  std::uint64_t prepared_ = 0;
  std::uint64_t stale_ = 0;
  std::vector<std::uint64_t> credits_;
  /// Per GPU: (epochs ended, batches of the epoch it is in), take_batches' turns.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> progress_;
  std::vector<int> turns_;  ///< take_batches' order of the GPUs
  std::uint64_t in_flight_ = 0;
  std::uint64_t peak_in_flight_ = 0;
  window_occupancy occupancy_;
  std::uint64_t ended_epochs_ = 0;  ///< (gpu, epoch) pairs whose last batch went out
  latency_budget budget_;
  budget_figures sent_budget_;
  std::uint64_t handoffs_ = 0;
};

}  // namespace conveyor
