#pragma once
/// One step of a per-sample transform chain (decode, crop, flip, normalise, ...), and the
/// factories that validate a transform_spec and build its step.

#include <cstddef>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "conveyor/error.hpp"
#include "core/transforms/sample_state.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor {

/// Immutable once built: apply() is const and may run concurrently on different samples from
/// any number of threads. All randomness comes from the `rng` argument.
class transform_step {
 public:
  virtual ~transform_step() = default;

  /// The op name, as in the configuration ("decode", "flip", ...).
  virtual std::string_view name() const noexcept = 0;

  /// Transforms `sample` in place. On error the sample is left as it was before the call (it
  /// can be retried or reported); the error names the sample's id and key and this step.
  virtual expected<void> apply(sample_state& sample, std::mt19937_64& rng) const = 0;
};

/// A step that works on the decoded image: apply() refuses a sample without one and turns
/// OpenCV exceptions into errc::transform_error, so that subclasses need do neither.
class image_step : public transform_step {
 public:
  expected<void> apply(sample_state& sample, std::mt19937_64& rng) const final;

 protected:
  /// Precondition: !sample.image.empty(). May throw cv::Exception.
  virtual expected<void> apply_to_image(sample_state& sample, std::mt19937_64& rng) const = 0;
};

using step_ptr = std::unique_ptr<const transform_step>;

/// Checks the parameters of `spec` and builds its step; errc::invalid_argument names the op and
/// the parameter otherwise. Thread-safe.
expected<step_ptr> make_step(const transform_spec& spec);

// One factory per op, each defined next to its step.
expected<step_ptr> make_step(const decode_spec& spec);
/// The decode step of a chain in which `next` (null: none) follows it. With spec.scaled and a
/// random_resized_crop next, it draws that crop's box from a JPEG's header with the crop's own
/// rng (step_rng of the next step: the very box the crop would draw on the full image; or
/// sample.given_box), decodes at the smallest jpeg_fast_reduction_scales() factor (1/8, 1/4,
/// 1/2; the other M/8 are slower than a full decode) that keeps the box at least the crop's
/// output size, and leaves box and scale in sample.crop_plan for the crop step. With a resize
/// next, the same for the whole image and the resize's output size. Not for nearest
/// interpolation (it picks source pixels, which a reduced decode averages). Other formats, and
/// every input otherwise, decode in full as make_step(spec) does.
expected<step_ptr> make_decode_step(const decode_spec& spec, const transform_spec* next);
expected<step_ptr> make_step(const random_resized_crop_spec& spec);
expected<step_ptr> make_step(const resize_spec& spec);
expected<step_ptr> make_step(const center_crop_spec& spec);
expected<step_ptr> make_step(const flip_spec& spec);
expected<step_ptr> make_step(const normalize_spec& spec);
expected<step_ptr> make_step(const to_uint8_spec& spec);

/// The generator step `step_index` of `sample` draws from, seeded from (epoch seed, sample id,
/// step index) only (sample_seed.hpp). The chain seeds each step with it; a step that decides
/// for a later one seeds that step's draws with it too, so the draws do not change.
std::mt19937_64 step_rng(const sample_state& sample, std::size_t step_index);

/// "sample <id> (key '<key>')": how errors name a sample.
std::string sample_location(const sample_state& sample);

/// An error about `sample` in step `step`: "sample <id> (key '<key>'), step <step>: <what>".
error sample_error(errc code, const sample_state& sample, std::string_view step,
                   std::string_view what);

}  // namespace conveyor
