#pragma once
/// The node's self-sizing (`pipeline.autotune`), as plain code: from what the node measures in
/// each interval (the trainers' wait, each pool's busy time, the window's time full, the
/// samples taken, the CPU the rest of the machine keeps busy) it decides how many of the
/// spawned preprocessors, straggler actors and readers are active and how large the credit
/// window is, within fixed bounds. No clock of its own: time comes with the readings.
///
/// How it decides (Cachew's scaling policy, driven by the live diagnosis's classes):
///   - Readings are judged in groups of `judge_intervals`; after a change (and at the start) the
///     first `settle_intervals` readings are skipped (the pool refills), and so is a reading in
///     which nothing was prepared that would begin a group (workers still starting).
///   - Counts in place are judged over `baseline_judgements` judgements before a trial starts,
///     a trial over `trial_judgements` before its verdict: the rate (samples prepared per
///     second) of a few seconds varies with the samples drawn (a heavy tail of slow ones).
///   - Trainers waiting, window-bound (live_diagnosis.hpp): the window grows by `window_step`,
///     within its bound, on trial; fetch-bound: one more reader, on trial; prep-bound, or a
///     window that cannot grow: one more preprocessor, on trial, when a core is free for it
///     (fewer preprocessors than the cores the rest of the machine leaves, rounded) or when the
///     preprocessors are the bottleneck themselves (busy `saturated` of their time). A growth
///     stays when the rate grew by more than `gain` (7%) and by more than twice the noise of
///     the baseline's judgements (their standard deviation over their mean), or the trainers'
///     wait halved at no loss; else it is taken back and that growth rests. With no growth left
///     to try: one fewer preprocessor, on trial, when there are more than the process's cores,
///     or when they are on every core left and not saturated (the node's other stages, the
///     feeders' collation among them, short of CPU: on 2 cores the image recipe runs fastest
///     with one).
///   - A shrink on trial stays when it cost less than `loss` (3%) of the rate and the trainers
///     still hardly wait (or wait no more than before); else it is taken back and rests.
///   - A trial taken back returns to counts already judged: their baseline judgements count
///     again (unless the load shifted), so the next decision needs one new judgement, not
///     `baseline_judgements`.
///   - A trial whose first judgement's rate fell by more than `early_loss` (and by more than 3x
///     the baseline's noise) is taken back at once, without waiting for its other judgements.
///   - A direction taken back rests `rest_judgements`, twice as long each time it is taken back
///     again (up to 8x), until a trial is kept or the load shifts.
///   - A growth taken back the first time is checked against the first judgement after it (the
///     same counts as the baseline's, A/B/A): when that rate moved from the baseline's by more
///     than the bar the growth had to clear, the machine drifted (a virtual machine's neighbours,
///     the pool warming), not the counts: the verdict is void, the direction does not rest, and
///     the baseline starts again from that judgement. Once per direction until a trial is kept
///     or the load shifts, so a drifting machine cannot make it try forever.
///   - Fewer preprocessors on every core left and not saturated are tried only window-bound (the
///     feeders' collation short of CPU): prep-bound, a pool idle part of its time on a busy
///     machine waits for CPU, and one fewer cost the speech recipe 34-42% on trial.
///   - The trainers hardly waiting: one fewer preprocessor (reader) where the rest of that pool
///     would still be busy less than `shrink_below` of its time; else, the window never full,
///     a smaller window (not below where it began); each on trial as a shrink.
///   - The machine short of memory (tuning_reading::memory_short): no growth; a smaller window
///     at once (down to its least), judgement after judgement.
///   - A change of at least `load_shift` cores in the rest of the machine's load ends every
///     rest, and the baseline starts again from the judgement that saw it: what failed before
///     may succeed now (competing processes came or went). A trial it happened in is taken
///     back without a verdict (and without rest).
/// Straggler actors follow the preprocessors (as many, within their bounds); the window
/// follows them by `window_per_worker` each (the pool's lookahead, batcher_core.hpp).
/// Single-threaded (the autotuner actor's).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/analysis/live_diagnosis.hpp"

namespace conveyor::analysis {

/// The counts autotune sets.
struct tuning {
  int preprocessors = 1;
  int stragglers = 0;
  int readers = 1;
  std::uint64_t window = 1;  ///< samples in flight at most (the credit window)

  bool operator==(const tuning& o) const noexcept {
    return preprocessors == o.preprocessors && stragglers == o.stragglers && readers == o.readers &&
           window == o.window;
  }
  bool operator!=(const tuning& o) const noexcept { return !(*this == o); }
};

/// "preprocessors=P stragglers=S readers=R window=W".
std::string describe(const tuning& t);

/// One interval's measurements. figures.prep_workers and figures.readers are the counts that
/// were active in it.
struct tuning_reading {
  interval_figures figures;
  std::uint64_t samples = 0;  ///< samples prepared in it (the pipeline's rate)
  double other_cpu = 0;       ///< cores the rest of the machine kept busy, on average
  double cores = 1;           ///< cores this process may run on
  /// The machine is short of memory (the actor: under a tenth of it available): nothing grows,
  /// the window shrinks.
  bool memory_short = false;
};

struct autotune_settings {
  int judge_intervals = 2;      ///< >= 1: readings per judgement
  int baseline_judgements = 2;  ///< >= 1: judgements of the counts in place before a trial
  int trial_judgements = 2;     ///< >= 1: judgements of a trial's counts before its verdict
  int history = 4;              ///< >= baseline and trial judgements: judgements kept
  int settle_intervals = 1;     ///< >= 0: readings skipped after a change
  double gain = 0.07;           ///< a growth stays when the rate grows by more than this share
  double loss = 0.03;           ///< a shrink stays when the rate falls by less than this share
  /// A pool shrinks when one fewer would be busy less than this share of its time.
  double shrink_below = 0.75;
  /// A trial's first judgement below the baseline's rate by more than this share ends it.
  double early_loss = 0.15;
  int rest_judgements = 10;  ///< >= 1: judgements a failed direction first rests
  double load_shift = 0.5;   ///< cores of change in the machine's other load that end the rests
  double window_step = 1.5;  ///< > 1: the window's growth factor when window-bound
  std::uint64_t window_per_worker = 4;  ///< window samples that follow each preprocessor
};

/// A change of counts and why.
struct tuning_change {
  tuning counts;
  std::string reason;
};

class autotuner {
 public:
  /// Starts at `start` (clamped into [least, most]); `least` <= `most` in every count, the
  /// window at least 1.
  autotuner(tuning start, tuning least, tuning most, autotune_settings settings = {});

  /// One interval's reading; what it decided when it decided something now: new counts, or a
  /// trial's verdict "kept" (the counts unchanged).
  std::optional<tuning_change> observe(const tuning_reading& r);

  const tuning& counts() const noexcept { return counts_; }
  /// Changes of counts so far (a trial and its taking back are two).
  std::uint64_t changes() const noexcept { return changes_; }

 private:
  /// A judgement's figures: sums over its readings (or over several judgements).
  struct measure {
    void add(const tuning_reading& r) noexcept;
    void add(const measure& o) noexcept;
    double seconds = 0, wait_s = 0, prep_s = 0, read_s = 0, full_s = 0, other_cpu_s = 0;
    std::uint64_t samples = 0;
    int trainers = 1, readings = 0;
    double cores = 1;
    bool memory_short = false;  ///< in any of its readings
    double rate() const noexcept {
      return seconds > 0 ? static_cast<double>(samples) / seconds : 0;
    }
    double wait() const noexcept { return seconds > 0 ? wait_s / (trainers * seconds) : 0; }
    double other_cpu() const noexcept { return seconds > 0 ? other_cpu_s / seconds : 0; }
  };
  enum class knob : std::uint8_t { preprocessors, readers, window, count };
  struct trial {
    knob what = knob::preprocessors;
    int step = 0;  ///< +1 growth, -1 shrink
    tuning before;
    measure baseline;
    double noise = 0;             ///< the baseline judgements' rates: standard deviation / mean
    std::vector<measure> judged;  ///< the baseline's judgements (recent_ when it began)
  };

  std::optional<tuning_change> judge();
  /// The last `last` judgements of recent_, pooled.
  measure pooled(std::size_t last) const;
  /// How much recent_'s rates vary: standard deviation / mean (0 with fewer than 2).
  double noise() const;
  std::optional<tuning_change> decide(const measure& m);
  std::optional<tuning_change> settle_trial(const measure& m);
  std::optional<tuning_change> try_step(knob k, int step, const measure& m, std::string why);
  /// On a trial's first judgement: its rate fell so far that it ends now.
  bool clearly_worse(const measure& m) const noexcept;
  /// A growth taken back the first time: the direction, the baseline's rate, the bar it had to
  /// clear; judged against the next judgement of the baseline's counts.
  struct recheck {
    knob what = knob::preprocessors;
    double before = 0;
    double bar = 0;
  };
  /// The first judgement after a growth was taken back: the verdict void when the baseline's
  /// rate moved by more than the growth's bar.
  std::optional<tuning_change> recheck_verdict();
  /// The trial of the preprocessors (one more, or one fewer) that fits `f`, if any.
  std::optional<tuning_change> try_preprocessors(const interval_figures& f, const measure& m,
                                                 const std::string& now);
  bool resting(knob k, int step) const noexcept;
  void rest(knob k, int step) noexcept;
  /// Ends every rest and forgets the failures (the machine or the counts changed).
  void end_rests() noexcept;
  /// True when the machine's other load moved by load_shift since it was last noted.
  bool note_load(const measure& m) noexcept;
  /// counts_ with `k` moved by `step` (followers updated), clamped; == counts_ when at a bound.
  tuning moved(knob k, int step) const noexcept;
  tuning clamp(tuning t) const noexcept;
  tuning_change apply(tuning next, std::string reason);

  tuning counts_;
  tuning least_;
  tuning most_;
  autotune_settings settings_;
  std::uint64_t start_window_ = 1;  ///< the window shrinks back no further than where it began
  measure current_;                 ///< the judgement being read
  std::vector<measure> recent_;     ///< judgements of the counts in place, oldest first
  int settling_ = 0;
  std::optional<trial> trial_;
  /// Per knob and direction (0 shrink, 1 growth): judgements it still rests, and how often it
  /// was taken back in a row (its next rest doubles with each, up to 8x).
  int rest_[static_cast<int>(knob::count)][2] = {};
  int failures_[static_cast<int>(knob::count)][2] = {};
  std::optional<recheck> recheck_;  ///< a growth's verdict to check, see recheck_verdict()
  double load_at_rest_ = 0;         ///< the other load when the last rest began
  std::uint64_t changes_ = 0;
};

}  // namespace conveyor::analysis
