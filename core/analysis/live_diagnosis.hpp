#pragma once
/// A running node's bottleneck, from the figures it already keeps, one monitor interval at a
/// time (the SageMaker heuristics, made exact where the node can tell):
///   trainer-bound  the trainers hardly wait for batches: the loader keeps up;
///   window-bound   they wait, neither the preprocessors nor the readers are saturated, and
///                  every credit of the window was held (in flight) for at least half the
///                  time the preprocessors idled: slow samples hold the oldest batch and the
///                  window, and the pool starves (a larger pipeline.window_samples, or
///                  latency_aware, lets it work);
///   prep-bound     they wait, and the preprocessors are busier than the readers;
///   fetch-bound    they wait, and the readers are busier than the preprocessors.
/// And the time share of each class over a run. Plain code; the node's diagnosis actor feeds
/// it (actors/diagnosis.hpp).

#include <array>
#include <cstdint>
#include <optional>

#include "core/analysis/stall_model.hpp"

namespace conveyor::analysis {

/// What happened in one interval, as totals over it.
struct interval_figures {
  double seconds = 0;         ///< the interval's length
  double trainer_wait_s = 0;  ///< time the trainers (all of them) waited for a batch
  int trainers = 1;
  double prep_busy_s = 0;  ///< time spent in transform steps (preprocessors and stragglers)
  int prep_workers = 1;
  double read_busy_s = 0;  ///< time spent reading samples
  int readers = 1;
  double window_full_s = 0;  ///< time in which every credit of the window was held

  /// The trainers' waiting, the preprocessors' and the readers' work, each as a share of
  /// their time in the interval. Precondition: seconds > 0, counts >= 1.
  double wait_share() const noexcept { return trainer_wait_s / (trainers * seconds); }
  double prep_share() const noexcept { return prep_busy_s / (prep_workers * seconds); }
  double read_share() const noexcept { return read_busy_s / (readers * seconds); }
  double window_full_share() const noexcept { return window_full_s / seconds; }
};

/// The trainers waited at most this share of the interval: trainer-bound.
inline constexpr double wait_threshold = 0.05;
/// A pool busier than this is the bottleneck itself (prep- or fetch-bound), full window or not.
inline constexpr double saturated = 0.85;
/// Window-bound: the window full for at least this share of the time the preprocessors idled
/// (with 16 modelled preprocessors under in_order, bench/scaling_model.sh, the pool idled 22-30%
/// of the time and the window was full 21-34%; under latency_aware 2% and 0-2%).
inline constexpr double idle_explained = 0.5;

/// The class of one interval. Precondition: seconds > 0, counts >= 1.
bottleneck classify(const interval_figures& f);

/// Time per class over a run, and the trainers' own rate: the samples they took while the
/// node was trainer-bound (batches ready whenever asked), over that time. Not synchronised.
class bottleneck_tally {
 public:
  /// An interval of `seconds` of class `b`, in which the trainers took `samples`.
  void add(bottleneck b, double seconds, std::uint64_t samples = 0);
  /// Samples per second the trainers took while trainer-bound; nullopt when never.
  std::optional<double> trainer_rate() const;
  /// Each class's share of the time counted, in all_bottlenecks order (zeros when none).
  std::array<double, 4> shares() const;
  /// The class with the most time; trainer when nothing was counted.
  bottleneck dominant() const;
  double total_s() const noexcept;

 private:
  std::array<double, 4> seconds_{};
  std::uint64_t trainer_samples_ = 0;
};

}  // namespace conveyor::analysis
