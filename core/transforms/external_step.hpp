#pragma once
/// A step whose work runs in another process while the sample waits (a Python worker's
/// dataset[i]: core/python/python_step.hpp). The actors begin it, then wait for it in slices:
/// between two slices a preprocessor whose sample ran over its budget hands the sample, with
/// the work still running, to a straggler actor, which waits for the rest. Nothing is redone:
/// the work in flight (sample_state::pending) moves with the sample.

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/transforms/sample_state.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {

/// One process an external step runs its work in, as the monitor shows an actor: samples
/// answered, their rate and time, and whether one is in flight now.
struct external_process_figures {
  std::string name;  ///< e.g. "python-worker-0"
  int pid = -1;      ///< -1: none runs in this place now
  bool in_flight = false;
  std::uint64_t items = 0;
  std::uint64_t items_per_s = 0;
  std::int64_t p50_us = 0;
  std::int64_t p90_us = 0;
  std::int64_t p99_us = 0;
};

/// Immutable once built, like every step: begin() and wait() are const and may run
/// concurrently on different samples.
class external_step : public transform_step {
 public:
  /// Starts the work on `sample`, leaving it in sample.pending. On error nothing is pending.
  virtual expected<void> begin(sample_state& sample, std::mt19937_64& rng) const = 0;
  /// Waits at most `timeout` for the work begun: true when it has ended (its fields written,
  /// sample.pending empty), false while it still runs. The step bounds the work itself (a work
  /// past its own time bound is abandoned, an error). Precondition: sample.pending is set.
  virtual expected<bool> wait(sample_state& sample, std::chrono::nanoseconds timeout) const = 0;
  /// begin() unless the work was begun (by another actor), then wait() until it ends.
  expected<void> apply(sample_state& sample, std::mt19937_64& rng) const final;
  /// The processes the work runs in, for the monitor (thread-safe); none by default.
  virtual std::vector<external_process_figures> processes() const { return {}; }
  /// Final: transform_chain::next_is_external reads it.
  step_cost cost() const noexcept final { return {step_cost::kind::external, 0}; }
};

}  // namespace conveyor
