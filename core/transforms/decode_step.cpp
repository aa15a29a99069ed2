// The decode step: encoded bytes -> RGB image, reduced in the DCT domain when the crop that
// follows is known before decoding.

#include <optional>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/transforms/crop_geometry.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

class decode_step final : public transform_step {
 public:
  /// `crop`: the random_resized_crop that directly follows, when scaled decoding is on.
  decode_step(const decode_spec& spec, const std::optional<random_resized_crop_spec>& crop)
      : crop_(crop) {
    options_.strict = spec.strict;
  }

  std::string_view name() const noexcept override { return decode_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    std::optional<planned_crop> plan = plan_crop(sample);
    decode_options options = options_;
    if (plan) {
      options.scale_num = plan->decode_scale.num;
      options.scale_denom = plan->decode_scale.denom;
    }
    auto image = decode_image(sample.encoded, options);
    if (!image) {
      return sample_error(image.error().code(), sample, name(), image.error().message());
    }
    sample.image = std::move(*image);
    sample.crop_plan = plan;
    // The bytes are dead weight from here on; swapping really returns the memory (clear()
    // would keep the capacity) while the sample waits in queues.
    std::vector<std::uint8_t>().swap(sample.encoded);
    return {};
  }

 private:
  /// The crop's box and the decode scale, for a JPEG when a crop follows; nullopt otherwise.
  /// Other formats only reveal their size by decoding in full: the crop then draws itself. An
  /// unreadable header is left for decode_image to report.
  std::optional<planned_crop> plan_crop(const sample_state& sample) const {
    if (!crop_ || !is_jpeg(sample.encoded.data(), sample.encoded.size())) {
      return std::nullopt;
    }
    auto info = probe_image(sample.encoded);
    if (!info) {
      return std::nullopt;
    }
    image_extent source{info->width, info->height};
    // The crop step's own generator: the box is the one it would draw on the full image.
    std::mt19937_64 crop_rng = step_rng(sample, sample.next_step + 1);
    crop_box box = random_resized_crop_box(source.width, source.height, crop_->params, crop_rng);
    scale_ratio scale =
        smallest_scale_for_crop(box, {crop_->width, crop_->height}, jpeg_fast_reduction_scales());
    return planned_crop{box, source, scale};
  }

  decode_options options_;
  std::optional<random_resized_crop_spec> crop_;
};

}  // namespace

expected<step_ptr> make_decode_step(const decode_spec& spec, const transform_spec* next) {
  std::optional<random_resized_crop_spec> crop;
  if (spec.scaled && next != nullptr) {
    if (const auto* rrc = std::get_if<random_resized_crop_spec>(next)) {
      crop = *rrc;
    }
  }
  return step_ptr(std::make_unique<decode_step>(spec, crop));
}

expected<step_ptr> make_step(const decode_spec& spec) {
  return make_decode_step(spec, nullptr);
}

}  // namespace conveyor
