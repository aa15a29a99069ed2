#pragma once
/// One step of a per-sample transform chain (decode, crop, flip, normalise, ...), and the
/// factories that validate a transform_spec and build its step.

#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "conveyor/error.hpp"
#include "core/sample_state.hpp"
#include "core/transform_spec.hpp"

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
expected<step_ptr> make_step(const random_resized_crop_spec& spec);
expected<step_ptr> make_step(const resize_spec& spec);
expected<step_ptr> make_step(const center_crop_spec& spec);
expected<step_ptr> make_step(const flip_spec& spec);
expected<step_ptr> make_step(const normalize_spec& spec);
expected<step_ptr> make_step(const to_uint8_spec& spec);

/// "sample <id> (key '<key>')": how errors name a sample.
std::string sample_location(const sample_state& sample);

/// An error about `sample` in step `step`: "sample <id> (key '<key>'), step <step>: <what>".
error sample_error(errc code, const sample_state& sample, std::string_view step,
                   std::string_view what);

}  // namespace conveyor
