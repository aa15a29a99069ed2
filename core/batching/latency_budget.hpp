#pragma once
/// The per-sample latency budget of latency-aware batching, learned from observed latencies
/// rather than set as a constant (MinatoLoader's weakness), and the early recognition of
/// stragglers from an image's pixel count, before the expensive decode starts.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/metrics/latency_tracker.hpp"

namespace conveyor {

/// How the budget learns. Plain value; the batcher builds it from [batching].
struct latency_budget_settings {
  double percentile = 90.0;                ///< batching.straggler_percentile, in [0, 100]
  std::int64_t min_budget_ns = 5'000'000;  ///< batching.min_budget_ms: the budget's floor
  std::size_t window = 1024;               ///< observations kept (0 reads as 1)
  std::size_t warm_up = 32;                ///< observations before any hand-off (0 reads as 1)
  /// The budget and the cost model are recomputed on the observation that ends the warm-up
  /// and then on every `recompute_every`-th one (0 reads as 1); between, they stay as they
  /// are. This is for the broadcast (new figures at most every M samples), not for CPU:
  /// record() costs about 0.35 us at window 1024 (1 us at 8192) whether M is 1 or 64, as the
  /// tracker's sorted copy must be repaired either way (measured: -O2, 2M lognormal latencies).
  std::size_t recompute_every = 16;
};

/// budget = max(min_budget, the `percentile`-th percentile (nearest rank, see
/// latency_tracker) of the last `window` per-sample preparation latencies). Until `warm_up`
/// observations have been recorded, there is no budget yet: budget_ns() is no_hand_off and
/// nothing is a straggler, because a percentile of a handful of samples (the first ones are
/// also the slowest: cold caches, lazy allocations) would hand off samples for nothing.
///
/// Early recognition: a least-squares fit latency = a + b * pixels over the last `window`
/// observations that came with a pixel count (a JPEG's is in its header: probe_image), once
/// there are `warm_up` of them (until then nothing is a predicted straggler). With
/// fewer than two distinct pixel counts it falls back to a ratio estimate (a = 0, b = mean
/// latency / mean pixels); a fitted b < 0 (noise: bigger images look cheaper) reads as b = 0,
/// a = mean latency. A sample whose predicted cost exceeds the budget can be handed to a
/// straggler actor before its decode starts.
///
/// All time comes in through arguments; nothing reads a clock. record() adds to a
/// latency_tracker and, every `recompute_every` records, asks it for the percentile (see
/// latency_budget_settings for the cost); the fit keeps running sums, rebuilt exactly from its
/// window every `window` sized records so rounding never accumulates. Queries are O(1).
/// Single-threaded: owned by one actor (the batcher), which broadcasts budget_ns() and
/// straggler_pixels() (integers, safe on the wire) to the preprocessors.
class latency_budget {
 public:
  /// budget_ns() during the warm-up: larger than any elapsed time, so nothing is over it.
  static constexpr std::int64_t no_hand_off = std::numeric_limits<std::int64_t>::max();

  explicit latency_budget(latency_budget_settings settings = {});

  /// One sample's preparation latency (work time, without queueing), and the pixel count of
  /// its decoded image when known (<= 0: unknown; then it feeds the budget but not the fit).
  void record(std::int64_t latency_ns, std::int64_t pixels = 0);

  /// The current budget, or no_hand_off during the warm-up.
  std::int64_t budget_ns() const noexcept { return budget_ns_; }
  /// True when `elapsed_ns` of work on one sample is past the budget.
  bool over_budget(std::int64_t elapsed_ns) const noexcept { return elapsed_ns > budget_ns_; }
  /// The warm-up is over: there is a budget.
  bool warm() const noexcept { return budget_ns_ != no_hand_off; }

  /// The cost model's prediction, as of the last recompute, for an image of `pixels` pixels
  /// (>= 0; 0 before the warm-up ends or while no observation came with a pixel count).
  std::int64_t predicted_ns(std::int64_t pixels) const noexcept;
  /// Images with more pixels than this are predicted stragglers; no_hand_off while there is no
  /// budget or no cost model yet, or when no image size would go over the budget.
  std::int64_t straggler_pixels() const noexcept { return straggler_pixels_; }
  /// predicted_ns(pixels) > budget_ns(), up to rounding at the boundary (it is decided by
  /// straggler_pixels(), so that the preprocessors, who only get that number, agree).
  bool is_predicted_straggler(std::int64_t pixels) const noexcept {
    return pixels > straggler_pixels_;
  }

  /// Observations ever recorded.
  std::uint64_t observations() const noexcept { return latencies_.total_recorded(); }
  const latency_budget_settings& settings() const noexcept { return settings_; }

 private:
  struct sized_latency {
    double pixels;
    double latency_ns;
  };
  struct fit_sums {
    double n = 0, x = 0, y = 0, xx = 0, xy = 0;
    void add(const sized_latency& p, double sign) noexcept;
  };

  void record_sized(std::int64_t latency_ns, std::int64_t pixels);
  void rebuild_sums();
  void recompute();
  void refit();
  std::int64_t threshold_pixels() const noexcept;

  latency_budget_settings settings_;
  latency_tracker latencies_;
  std::int64_t budget_ns_ = no_hand_off;

  std::vector<sized_latency> sized_;  ///< ring of the window's observations with a size
  std::size_t sized_head_ = 0;        ///< the oldest entry once full
  std::uint64_t sized_records_ = 0;   ///< sized observations ever recorded
  fit_sums sums_;
  double intercept_ns_ = 0;
  double ns_per_pixel_ = 0;
  std::int64_t straggler_pixels_ = no_hand_off;
};

}  // namespace conveyor
