#pragma once
/// The per-sample transform chain: an immutable list of steps that a sample goes through one
/// step at a time, over the sample's named fields. A sample may stop between steps and resume
/// on another thread or actor; because each step's randomness is seeded from (epoch seed,
/// sample id, step index) only, the result is the same wherever and whenever each step runs.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/field_schema.hpp"
#include "core/transforms/external_step.hpp"
#include "core/transforms/sample_state.hpp"
#include "core/transforms/transform_spec.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {

/// Immutable: every method is const and safe to call concurrently on different samples.
/// Copies are cheap and share the steps.
class transform_chain {
 public:
  /// Builds the steps of `specs` in order, binding the fields each reads and writes
  /// (chain_fields.hpp). errc::invalid_argument for bad parameters, errc::invalid_config for
  /// fields that do not add up (a field read before any step makes it, of a type the step
  /// cannot take, an image left at the end); the message starts "transform <i> (<op>): ", and
  /// `failed_step`, when given, is set to i.
  static expected<transform_chain> build(const std::vector<transform_spec>& specs,
                                         std::size_t* failed_step = nullptr);

  /// The fields every finished sample holds, in schema order (each collated as a stack: the
  /// topology's [collate] says otherwise).
  const sample_schema& schema() const noexcept { return shared_->schema; }

  /// Makes `sample` ready to run from its first step: one slot per field of the chain, and
  /// the record's `label` in field "label".
  void start(sample_state& sample, std::int32_t label) const;

  /// Runs step `sample.next_step` with the rng seeded by
  /// step_seed(sample.epoch_seed, sample.sample_id, sample.next_step), appends its duration
  /// to sample.step_ns and advances next_step. On error the sample stays at that step
  /// (step_ns.size() == next_step always holds), so it may be retried or reported. Once no
  /// later step reads a part of the record, its bytes are freed.
  expected<void> run_next(sample_state& sample) const;

  /// Whether the sample's next step is an external_step (its work runs in another process).
  /// Precondition: !done(sample).
  bool next_is_external(const sample_state& sample) const noexcept;
  /// For an external next step: begins it (unless begun: sample.pending) and waits at most
  /// `timeout` for its end. true once it has ended, as run_next would leave the sample (its
  /// time counted from its begin, next_step advanced); false while it still runs. On error the
  /// sample stays at that step, nothing pending. Precondition: next_is_external(sample).
  expected<bool> advance_external(sample_state& sample, std::chrono::nanoseconds timeout) const;
  /// The processes of every external step (external_step::processes), for the monitor.
  std::vector<external_process_figures> external_processes() const;
  /// Runs the remaining steps; stops at the first error.
  expected<void> run_all(sample_state& sample) const;

  /// True when every step has run on `sample`.
  bool done(const sample_state& sample) const noexcept { return sample.next_step >= size(); }
  /// How the sample's next step's cost grows (transform_step::cost). Precondition: !done.
  step_cost next_cost(const sample_state& sample) const noexcept {
    return shared_->steps[sample.next_step]->cost();
  }

  /// The fields of a finished sample, in schema order, moved out of it. errc::transform_error
  /// naming the sample and the field when one is missing (a step skipped it) or is not of its
  /// schema type.
  expected<std::vector<host_array>> take_fields(sample_state& sample) const;

  std::size_t size() const noexcept { return shared_->steps.size(); }

  /// Precondition: i < size().
  const transform_step& step(std::size_t i) const { return *shared_->steps[i]; }

 private:
  struct shared {
    std::vector<step_ptr> steps;
    sample_schema schema;
    std::vector<int> schema_positions;  ///< per chain field: its schema index, or -1
    std::size_t field_count = 0;
    std::size_t last_part_reader = 0;  ///< steps after this one read no part of the record
  };
  explicit transform_chain(std::shared_ptr<const shared> s) : shared_(std::move(s)) {}
  /// Records a step that has run since `start` and advances the sample past it.
  void finish_step(sample_state& sample, std::chrono::steady_clock::time_point start) const;

  std::shared_ptr<const shared> shared_;
};

}  // namespace conveyor
