#pragma once
/// The per-sample transform chain: an immutable list of steps that a sample goes through one
/// step at a time. A sample may stop between steps and resume on another thread or actor;
/// because each step's randomness is seeded from (epoch seed, sample id, step index) only, the
/// result is the same wherever and whenever each step runs.

#include <cstddef>
#include <memory>
#include <vector>

#include "conveyor/error.hpp"
#include "core/transforms/sample_state.hpp"
#include "core/transforms/transform_spec.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {

/// Immutable: every method is const and safe to call concurrently on different samples.
/// Copies are cheap and share the steps.
class transform_chain {
 public:
  /// Builds the steps of `specs` in order. errc::invalid_argument for bad parameters;
  /// errc::invalid_config for an order that cannot work: the chain must start with decode and
  /// end with normalize or to_uint8 (which write the output), each exactly once.
  static expected<transform_chain> build(const std::vector<transform_spec>& specs);

  /// Runs step `sample.next_step` with the rng seeded by
  /// step_seed(sample.epoch_seed, sample.sample_id, sample.next_step), appends its duration
  /// to sample.step_ns and advances next_step. On error the sample stays at that step
  /// (step_ns.size() == next_step always holds), so it may be retried or reported.
  expected<void> run_next(sample_state& sample) const;

  /// Runs the remaining steps; stops at the first error.
  expected<void> run_all(sample_state& sample) const;

  /// True when every step has run on `sample`.
  bool done(const sample_state& sample) const noexcept { return sample.next_step >= size(); }

  std::size_t size() const noexcept { return steps_->size(); }

  /// Precondition: i < size().
  const transform_step& step(std::size_t i) const { return *(*steps_)[i]; }

 private:
  explicit transform_chain(std::shared_ptr<const std::vector<step_ptr>> steps)
      : steps_(std::move(steps)) {}

  std::shared_ptr<const std::vector<step_ptr>> steps_;
};

}  // namespace conveyor
