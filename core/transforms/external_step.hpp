#pragma once
/// A step whose work runs in another process while the sample waits (a Python worker's
/// dataset[i]: core/python/python_step.hpp). The actors begin it, then wait for it in slices:
/// between two slices a preprocessor whose sample ran over its budget hands the sample, with
/// the work still running, to a straggler actor, which waits for the rest. Nothing is redone:
/// the work in flight (sample_state::pending) moves with the sample.

#include <chrono>
#include <random>

#include "conveyor/error.hpp"
#include "core/transforms/sample_state.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {

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
  /// Final: transform_chain::next_is_external reads it.
  step_cost cost() const noexcept final { return {step_cost::kind::external, 0}; }
};

}  // namespace conveyor
