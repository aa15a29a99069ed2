#pragma once
/// One step of a per-sample transform chain (decode, crop, flip, normalise, ...), and the
/// factories that validate a transform_spec and build its step in a chain: a step reads and
/// writes named fields of the sample, bound to their indices when the chain is built
/// (chain_fields.hpp), so that nothing looks a name up per sample.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "conveyor/error.hpp"
#include "core/transforms/chain_fields.hpp"
#include "core/transforms/sample_state.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor {

/// How a step's cost grows, for the hand-off decision before it (actors/sample_work.hpp):
/// `clock` (built-in steps: the time the sample has taken so far says), `cheap` (a hand-off
/// before it would cost more than running it), or `per_element` (with the element count of
/// field `field`, which becomes the sample's size measure, as an image's pixel count is).
/// `external`: the work runs in another process (external_step.hpp); the clock says, and a
/// preprocessor may hand the sample off while it runs.
struct step_cost {
  enum class kind : std::uint8_t { clock, cheap, per_element, external };
  kind how = kind::clock;
  std::size_t field = 0;  ///< per_element: the field's index in the chain
};

/// Immutable once built: apply() is const and may run concurrently on different samples from
/// any number of threads. All randomness comes from the `rng` argument: a step that works on
/// several fields (an image and its boxes) draws once for all of them.
class transform_step {
 public:
  virtual ~transform_step() = default;

  /// The op name, as in the configuration ("decode", "flip", ...).
  virtual std::string_view name() const noexcept = 0;

  /// Transforms `sample` in place. On error the sample is left as it was before the call (it
  /// can be retried or reported); the error names the sample's id and key and this step.
  virtual expected<void> apply(sample_state& sample, std::mt19937_64& rng) const = 0;

  /// How its cost grows (see step_cost); the clock alone unless a step says otherwise.
  virtual step_cost cost() const noexcept { return {}; }
};

/// A step that works on an image field (the first of its fields): apply() refuses a sample
/// whose field holds no image and turns OpenCV exceptions into errc::transform_error, so that
/// subclasses need do neither.
class image_step : public transform_step {
 public:
  explicit image_step(std::size_t image_field) : image_field_(image_field) {}
  expected<void> apply(sample_state& sample, std::mt19937_64& rng) const final;

 protected:
  /// Precondition: the image field holds an image. May throw cv::Exception.
  virtual expected<void> apply_to_image(sample_state& sample, std::mt19937_64& rng) const = 0;
  cv::Mat& image(sample_state& sample) const { return sample.fields[image_field_].image; }
  std::size_t image_field() const noexcept { return image_field_; }

 private:
  std::size_t image_field_;
};

using step_ptr = std::unique_ptr<const transform_step>;

/// Checks the parameters of `spec` alone; errc::invalid_argument names the op and the
/// parameter otherwise. Thread-safe.
expected<void> check_params(const transform_spec& spec);

/// Builds the step of `spec` as the next step of a chain whose fields so far are `fields`:
/// checks its parameters, binds the fields it reads (errc::invalid_config naming the field
/// when no step before made it, or made it of a type the step cannot take) and declares those
/// it writes. `next` is the spec of the step after it (null: none), which a decode uses to
/// plan a reduced decode for a crop or resize.
expected<step_ptr> make_step(const transform_spec& spec, chain_fields& fields,
                             const transform_spec* next);

// One factory per op, each defined next to its step.
/// The decode step. With spec.scaled, a JPEG image and a random_resized_crop of the same image
/// field next, it draws that crop's box from the JPEG's header with the crop's own rng
/// (step_rng of the next step: the very box the crop would draw on the full image; or
/// sample.given_box), decodes at the smallest jpeg_fast_reduction_scales() factor (1/8, 1/4,
/// 1/2; the other M/8 are slower than a full decode) that keeps the box at least the crop's
/// output size, and leaves box and scale in sample.crop_plan for the crop step. With a resize
/// next, the same for the whole image and the resize's output size. Not for nearest
/// interpolation (it picks source pixels, which a reduced decode averages). Other formats, and
/// every input otherwise, decode in full.
expected<step_ptr> make_step(const decode_spec& spec, chain_fields& fields,
                             const transform_spec* next);
expected<step_ptr> make_step(const random_resized_crop_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const resize_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const center_crop_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const flip_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const normalize_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const to_uint8_spec& spec, chain_fields& fields);
// The volume steps (volume_crop_step.cpp, volume_steps.cpp).
expected<step_ptr> make_step(const rand_balanced_crop_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const rand_flip_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const cast_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const rand_brightness_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const gaussian_noise_spec& spec, chain_fields& fields);
// The speech steps (speech_steps.cpp, feature_steps.cpp, tokenize_step.cpp).
expected<step_ptr> make_step(const speed_perturb_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const trim_silence_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const dither_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const preemphasis_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const mel_spectrogram_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const normalize_features_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const spec_augment_spec& spec, chain_fields& fields);
expected<step_ptr> make_step(const frame_splice_spec& spec, chain_fields& fields);
/// Reads the vocabulary file: errc::invalid_config naming its path and line when it does not.
expected<step_ptr> make_step(const tokenize_spec& spec, chain_fields& fields);
/// A Python function (python_transform_step.cpp): its fields bound, then spec.bind's step, or
/// where it is unbound a step that refuses every sample (a topology only loaded).
expected<step_ptr> make_step(const python_transform_spec& spec, chain_fields& fields);
/// A public API step (user_step.hpp).
expected<step_ptr> make_step(const user_step_spec& spec, chain_fields& fields);
/// A step built by a part of Conveyor (external_step.cpp): spec.make's.
expected<step_ptr> make_step(const built_step_spec& spec, chain_fields& fields);

// One parameter check per op, next to its factory.
expected<void> check_params(const decode_spec& spec);
expected<void> check_params(const random_resized_crop_spec& spec);
expected<void> check_params(const resize_spec& spec);
expected<void> check_params(const center_crop_spec& spec);
expected<void> check_params(const flip_spec& spec);
expected<void> check_params(const normalize_spec& spec);
expected<void> check_params(const to_uint8_spec& spec);
expected<void> check_params(const rand_balanced_crop_spec& spec);
expected<void> check_params(const rand_flip_spec& spec);
expected<void> check_params(const cast_spec& spec);
expected<void> check_params(const rand_brightness_spec& spec);
expected<void> check_params(const gaussian_noise_spec& spec);
expected<void> check_params(const speed_perturb_spec& spec);
expected<void> check_params(const trim_silence_spec& spec);
expected<void> check_params(const dither_spec& spec);
expected<void> check_params(const preemphasis_spec& spec);
expected<void> check_params(const mel_spectrogram_spec& spec);
expected<void> check_params(const normalize_features_spec& spec);
expected<void> check_params(const spec_augment_spec& spec);
expected<void> check_params(const frame_splice_spec& spec);
expected<void> check_params(const tokenize_spec& spec);
/// A function "module:callable", dtypes and ranks of as many entries as makes, reads and makes
/// without repeats.
expected<void> check_params(const python_transform_spec& spec);
/// Its factory made a step (the loader checked its parameters then).
expected<void> check_params(const user_step_spec& spec);
expected<void> check_params(const built_step_spec& spec);

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
