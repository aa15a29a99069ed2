#pragma once
/// What preprocessors and straggler actors both do to a sample: run its steps one at a time
/// (an exception becomes an error value, so one bad sample never takes an actor down), and
/// package the result for the batcher.

#include <chrono>
#include <cstdint>

#include "conveyor/error.hpp"
#include "core/batching/budget_figures.hpp"
#include "core/batching/prepared_sample.hpp"
#include "core/delivery/pipeline_status.hpp"
#include "core/transforms/sample_state.hpp"
#include "core/transforms/transform_chain.hpp"

namespace conveyor {

/// Runs the sample's next step and counts it in `status`.
expected<void> run_step(const transform_chain& chain, sample_state& s, pipeline_status& status);

/// Brings the sample one step on: runs its next step, or, when that step is external, waits at
/// most `slice` for it (advance_external). true: a step ended; false: the external one still
/// runs.
expected<bool> step_or_wait(const transform_chain& chain, sample_state& s, pipeline_status& status,
                            std::chrono::nanoseconds slice);

/// For a next step that is external (its work in another process): begins it unless begun,
/// waits at most `timeout` for its end (transform_chain::advance_external) and counts it in
/// `status` once ended. true: ended; false: still running (the sample may be handed off as it
/// is, the work in flight with it).
expected<bool> advance_external(const transform_chain& chain, sample_state& s,
                                pipeline_status& status, std::chrono::nanoseconds timeout);

/// The prepared sample made of a finished state (its fields and timings move out), each field
/// checked to fit the batch as `schema` (the pipeline's: the chain's fields with their
/// collates) carries it; errc::transform_error naming the sample and why otherwise (a shape a
/// stack field cannot take, an extent past a padded field's max_shape, ...): the sample is
/// quarantined.
expected<prepared_ptr> make_prepared(const transform_chain& chain, const sample_schema& schema,
                                     const sample_ticket& ticket, sample_state& s, bool handed_off);

/// Whether `s`, about to run its next step (or waiting for an external one), is past what the
/// batcher's budget `b` allows, so that a straggler actor should finish it: before an external
/// step (or while it runs), when `elapsed_ns` is over b.budget_ns; before the first step, when
/// the size its header gave (s.source_pixels) is over b.straggler_pixels; before a cheap step,
/// never; before a step whose cost grows with a field's element count, when that count is over
/// b.straggler_pixels (it becomes the sample's size when the sample has none yet, so that the
/// budget's cost model learns latency against it) or `elapsed_ns` over b.budget_ns; else when
/// `elapsed_ns` is. Precondition: !chain.done(s).
bool past_budget(const transform_chain& chain, sample_state& s, const budget_figures& b,
                 std::int64_t elapsed_ns);

/// width x height from a JPEG's header (no decode), or 0 when it is not a JPEG or the header
/// does not read (the decode step then reports why).
std::int64_t header_pixels(const std::vector<std::uint8_t>& encoded);

}  // namespace conveyor
