// The decode step: encoded bytes -> RGB image, reduced in the DCT domain when the crop or
// resize that follows is known before decoding.

#include <optional>
#include <type_traits>
#include <variant>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/jpeg_region.hpp"
#include "core/transforms/crop_geometry.hpp"
#include "core/transforms/resampler.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

/// The step that directly follows, when scaled decoding may serve it.
using reducible_step = std::variant<std::monostate, random_resized_crop_spec, resize_spec>;

class decode_step final : public transform_step {
 public:
  decode_step(const decode_spec& spec, reducible_step next)
      : next_(std::move(next)),
        roi_(spec.roi && std::holds_alternative<random_resized_crop_spec>(next_)) {
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
    auto image = decode_planned(sample, options, plan);
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
  /// The box of what follows (the crop's, or the whole image for a resize) and the decode
  /// scale, for a JPEG; nullopt otherwise. Other formats only reveal their size by decoding in
  /// full: the step that follows then works on the full image. An unreadable header is left
  /// for decode_image to report.
  std::optional<planned_crop> plan_crop(const sample_state& sample) const {
    if (std::holds_alternative<std::monostate>(next_) ||
        !is_jpeg(sample.encoded.data(), sample.encoded.size())) {
      return std::nullopt;
    }
    auto info = probe_image(sample.encoded);
    if (!info) {
      return std::nullopt;
    }
    image_extent source{info->width, info->height};
    if (const auto* resize = std::get_if<resize_spec>(&next_)) {
      return plan_for({0, 0, source.width, source.height}, source, resize_extent(*resize, source));
    }
    const auto& crop = std::get<random_resized_crop_spec>(next_);
    // The crop step's own generator: the box is the one it would draw on the full image.
    std::mt19937_64 crop_rng = step_rng(sample, sample.next_step + 1);
    crop_box box = crop_box_for(sample, source.width, source.height, crop.params, crop_rng);
    return plan_for(box, source, {crop.width, crop.height});
  }

  static planned_crop plan_for(const crop_box& box, image_extent source, image_extent out) {
    auto scale = planned_decode_scale(box, out, jpeg_fast_reduction_scales());
    image_extent decoded = scaled_extent(source, scale);
    return {box, source, scale, {0, 0, decoded.width, decoded.height}};
  }

  /// The image for `plan`: for a crop, only the region its box needs when the JPEG allows
  /// (plan->decoded says which); otherwise the whole image at the plan's scale.
  expected<cv::Mat> decode_planned(const sample_state& sample, const decode_options& options,
                                   std::optional<planned_crop>& plan) const {
    if (plan && roi_) {
      crop_box region = decoded_region_of(plan->source_box, plan->source, plan->decode_scale);
      auto part = decode_jpeg_region(sample.encoded.data(), sample.encoded.size(), options,
                                     {region.left, region.top, region.width, region.height});
      if (!part) {
        return std::move(part).error();
      }
      if (*part) {
        plan->decoded = region;
        return std::move(**part);
      }
    }
    return decode_image(sample.encoded, options);
  }

  decode_options options_;
  reducible_step next_;
  bool roi_ = true;  ///< decode.roi, and a crop follows: only its region is decoded
};

// What follows `spec`, when a reduced decode may serve it.
reducible_step reducible(const decode_spec& spec, const transform_spec* next) {
  if (!spec.scaled || next == nullptr) {
    return {};
  }
  return std::visit(
      [](const auto& step) -> reducible_step {
        using step_spec = std::decay_t<decltype(step)>;
        if constexpr (std::is_same_v<step_spec, random_resized_crop_spec> ||
                      std::is_same_v<step_spec, resize_spec>) {
          if (resampler(step.interp).takes_reduced_decodes()) {
            return step;
          }
        }
        return {};
      },
      *next);
}

}  // namespace

expected<step_ptr> make_decode_step(const decode_spec& spec, const transform_spec* next) {
  return step_ptr(std::make_unique<decode_step>(spec, reducible(spec, next)));
}

expected<step_ptr> make_step(const decode_spec& spec) {
  return make_decode_step(spec, nullptr);
}

}  // namespace conveyor
