#pragma once
/// DS-Analyzer's differential model of a training job's input pipeline (Mohan et al.,
/// "Analyzing and Mitigating Data Stalls in DNN Training"): the job runs at the slowest of
/// three rates, each measured apart from the others:
///   ingestion  what the trainer consumes (its step time, with batches ready in memory);
///   prep       what the CPUs prepare with the data already in memory (the transform chain);
///   fetch      what storage delivers, a cached share coming from memory instead.
/// The slowest names the bottleneck; the trainer waits (stalls) for the difference. What-ifs
/// change one rate: more preprocessors, a cache of another size, another batch size. Pure.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace conveyor::analysis {

/// Where a job's time goes: the trainer is the slowest part (the loader keeps up), or the
/// loader is, by preparing (CPU), fetching (storage), or by its window (every credit held,
/// e.g. by slow samples, while workers idle: live diagnosis only).
enum class bottleneck : std::uint8_t { trainer, prep, fetch, window };
constexpr std::array<bottleneck, 4> all_bottlenecks{bottleneck::trainer, bottleneck::prep,
                                                    bottleneck::fetch, bottleneck::window};

/// "trainer", "prep", "fetch", "window" (JSON keys); "trainer-bound", ... with `bound`.
std::string_view to_string(bottleneck b) noexcept;
std::string_view bound_name(bottleneck b) noexcept;

/// Samples per second. Ingestion is infinite for a trainer that takes no time per batch.
struct rates {
  double ingestion = 0;
  double prep = 0;
  double fetch = 0;
};

/// What a job does with `rates`.
struct prediction {
  bottleneck limit = bottleneck::trainer;
  double samples_per_s = 0;  ///< the slowest rate
  double epoch_s = 0;        ///< an epoch's samples at that rate
  /// The trainer's wait over its wait plus its work, 1 - samples_per_s / ingestion; nullopt
  /// for a trainer that takes no time (only waits).
  std::optional<double> stall_fraction;
};

/// The prediction for `epoch_samples` samples an epoch. Precondition: rates > 0. A tie goes to
/// the trainer, then to prep (the cheaper fix).
prediction predict(const rates& r, std::uint64_t epoch_samples);

/// The trainer's demand: `gpus` x `batch_size` samples every `step_ms`; infinite at 0.
double ingestion_rate(int gpus, std::uint64_t batch_size, double step_ms);

/// DS-Analyzer's cache what-if: the fetch rate when a fraction `cached` in [0, 1] of the
/// samples comes from memory at `memory` samples/s and the rest from storage at `storage`:
/// 1 / (cached / memory + (1 - cached) / storage).
double fetch_with_cache(double cached, double memory, double storage);

/// The smallest cached fraction at which fetch reaches `target` samples/s: 0 when storage
/// alone does, nullopt when even everything in memory does not.
std::optional<double> cache_fraction_for(double target, double memory, double storage);

/// The preparation rate by number of preprocessors: measured for 1 .. measured().size()
/// workers, extrapolated beyond at the per-worker rate of the largest measured count (an
/// upper bound: more cores also share memory bandwidth).
class prep_scaling {
 public:
  /// measured[i]: samples/s with i + 1 workers. Precondition: not empty, every rate > 0.
  explicit prep_scaling(std::vector<double> measured);

  double rate(int workers) const;
  bool extrapolated(int workers) const noexcept {
    return workers > static_cast<int>(measured_.size());
  }
  /// The fewest workers that reach `target` samples/s (extrapolating if needed); nullopt for a
  /// target of infinity.
  std::optional<int> workers_for(double target) const;
  const std::vector<double>& measured() const noexcept { return measured_; }
  /// Samples/s per worker at the most workers measured: what each further worker adds when
  /// rates are extrapolated.
  double per_worker() const noexcept {
    return measured_.back() / static_cast<double>(measured_.size());
  }

 private:
  std::vector<double> measured_;
};

}  // namespace conveyor::analysis
