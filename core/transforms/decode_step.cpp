// The decode step: encoded bytes -> RGB image, reduced in the DCT domain when the crop or
// resize that follows is known before decoding.

#include <cstring>
#include <optional>
#include <type_traits>
#include <variant>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/jpeg_region.hpp"
#include "core/codecs/png_decoder.hpp"
#include "core/transforms/array_decode_step.hpp"
#include "core/transforms/crop_geometry.hpp"
#include "core/transforms/offloaded_decode.hpp"
#include "core/transforms/resampler.hpp"
#include "core/transforms/sample_parts.hpp"
#include "core/transforms/spec_checks.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

/// The step that directly follows, when scaled decoding may serve it.
using reducible_step = std::variant<std::monostate, random_resized_crop_spec, resize_spec>;

/// A record's image part -> an RGB image in field `to`.
class decode_step final : public transform_step {
 public:
  decode_step(const decode_spec& spec, std::size_t to, reducible_step next,
              std::shared_ptr<offloaded_decode> gpu)
      : from_(spec.from),
        to_(to),
        next_(std::move(next)),
        roi_(spec.roi && std::holds_alternative<random_resized_crop_spec>(next_)),
        gpu_(std::move(gpu)) {
    options_.strict = spec.strict;
  }

  std::string_view name() const noexcept override { return decode_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    auto part = find_sample_part(sample, from_);
    if (!part) {
      return sample_error(part.error().code(), sample, name(), part.error().message());
    }
    std::optional<planned_crop> plan = plan_crop(sample, *part);
    decode_options options = options_;
    if (plan) {
      options.scale_num = plan->decode_scale.num;
      options.scale_denom = plan->decode_scale.denom;
    }
    auto image = gpu_ && is_jpeg(part->data, part->size)
                     ? decode_shared(*part, options, plan, sample.sample_id)
                     : decode_planned(*part, options, plan);
    if (!image) {
      return sample_error(image.error().code(), sample, name(),
                          "part '" + part->name + "': " + image.error().message());
    }
    sample.fields[to_].set(std::move(*image));
    sample.crop_plan = plan;
    return {};
  }

 private:
  /// The box of what follows (the crop's, or the whole image for a resize) and the decode
  /// scale, for a JPEG; nullopt otherwise. Other formats only reveal their size by decoding in
  /// full: the step that follows then works on the full image. An unreadable header is left
  /// for decode_image to report.
  std::optional<planned_crop> plan_crop(const sample_state& sample, const part_ref& part) const {
    if (std::holds_alternative<std::monostate>(next_) || !is_jpeg(part.data, part.size)) {
      return std::nullopt;
    }
    auto info = probe_image(part.data, part.size);
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
  expected<cv::Mat> decode_planned(const part_ref& part, const decode_options& options,
                                   std::optional<planned_crop>& plan) const {
    if (plan && roi_) {
      crop_box region = decoded_region_of(plan->source_box, plan->source, plan->decode_scale);
      auto decoded = decode_jpeg_region(part.data, part.size, options,
                                        {region.left, region.top, region.width, region.height});
      if (!decoded) {
        return std::move(decoded).error();
      }
      if (*decoded) {
        plan->decoded = region;
        return std::move(**decoded);
      }
    }
    if (!is_jpeg(part.data, part.size) && is_png(part.data, part.size)) {
      return decode_png_image(part);  // libpng: 8 and 16 bit, in every build
    }
    return decode_image(part.data, part.size, options);
  }

  /// A JPEG decoded by the GPU or the CPU, whichever the share picks (offloaded_decode.hpp):
  /// the same region and size either way, so the steps that follow see the same plan.
  expected<cv::Mat> decode_shared(const part_ref& part, const decode_options& options,
                                  std::optional<planned_crop>& plan,
                                  std::uint64_t sample_id) const {
    auto request = gpu_request(part, options, plan);
    if (!request) {
      return decode_planned(part, options, plan);
    }
    if (auto image = gpu_->try_gpu(part.data, part.size, *request, sample_id)) {
      if (plan) {
        const auto& r = request->region;
        plan->decoded = {r.left, r.top, r.width, r.height};
      }
      return std::move(*image);
    }
    return gpu_->decode_on_cpu(offloaded_decode::pixels_of(*request),
                               [&] { return decode_planned(part, options, plan); });
  }

  /// What the GPU is asked for: the region decode_planned would decode (the crop's at the
  /// plan's scale, or the whole image) at a scale of 1/1, 1/2, 1/4 or 1/8; nullopt for
  /// another scale or an unreadable header (the CPU's decode reports it).
  std::optional<offload_request> gpu_request(const part_ref& part, const decode_options& options,
                                             const std::optional<planned_crop>& plan) const {
    if (options.scale_num != 1 || (options.scale_denom & (options.scale_denom - 1)) != 0 ||
        options.scale_denom > 8) {
      return std::nullopt;
    }
    offload_request request;
    request.reduce = options.scale_denom;
    request.strict = options.strict;
    if (plan) {
      request.width = plan->source.width;
      request.height = plan->source.height;
      crop_box r = roi_ ? decoded_region_of(plan->source_box, plan->source, plan->decode_scale)
                        : plan->decoded;
      request.region = {r.left, r.top, r.width, r.height};
      return request;
    }
    auto info = probe_image(part.data, part.size);
    if (!info) {
      return std::nullopt;
    }
    request.width = info->width;
    request.height = info->height;
    request.region = {0, 0, info->width, info->height};
    return request;
  }

  /// A PNG as an 8-bit RGB image (PIL's convert("RGB")); a 16-bit one is an error (decode it
  /// as an array: dtype = "int32").
  static expected<cv::Mat> decode_png_image(const part_ref& part) {
    png_options o;
    o.channels = png_channels::rgb;
    auto a = decode_png(part.data, part.size, o);
    if (!a) {
      return std::move(a).error();
    }
    if (a->type != dtype::uint8) {
      return error{errc::decode_error,
                   "a 16-bit PNG is no 8-bit image (decode it as an array: "
                   "dtype = \"int32\", rank = 3)"};
    }
    cv::Mat image(static_cast<int>(a->extent(0)), static_cast<int>(a->extent(1)), CV_8UC3);
    std::memcpy(image.data, a->bytes.data(), a->bytes.size());
    return image;
  }

  std::string from_;
  std::size_t to_;
  decode_options options_;
  reducible_step next_;
  bool roi_ = true;  ///< decode.roi, and a crop follows: only its region is decoded
  std::shared_ptr<offloaded_decode> gpu_;  ///< decode.on = "gpu" or "auto": null for the CPU alone
};

// What follows `spec`, when a reduced decode may serve it: a crop or resize of the image it
// makes, with nothing else moving along (a mask or boxes would need the full-size frame).
reducible_step reducible(const decode_spec& spec, const transform_spec* next) {
  if (!spec.scaled || next == nullptr) {
    return {};
  }
  return std::visit(
      [&spec](const auto& step) -> reducible_step {
        using step_spec = std::decay_t<decltype(step)>;
        if constexpr (std::is_same_v<step_spec, random_resized_crop_spec> ||
                      std::is_same_v<step_spec, resize_spec>) {
          if (resampler(step.interp).takes_reduced_decodes() && step.fields.size() == 1 &&
              step.fields.front() == spec.to) {
            return step;
          }
        }
        return {};
      },
      *next);
}

}  // namespace

namespace {

// The decoder `spec.from` names (its first alternative's extension decides; the record's
// image when it names none).
expected<part_kind> kind_of(const decode_spec& spec) {
  if (spec.from.empty()) {
    return part_kind::jpeg;  // the image path, whatever image format the part holds
  }
  return decoder_for_extension(spec.from.substr(0, spec.from.find(';')));
}

// A JPEG, or a PNG with no array type declared: an image a crop works on.
bool decodes_to_image(part_kind kind, const decode_spec& spec) {
  return kind == part_kind::jpeg || (kind == part_kind::png && !spec.type);
}

}  // namespace

expected<void> check_params(const decode_spec& spec) {
  if (spec.to.empty()) {
    return invalid_spec(decode_spec::op, "to must name the field it makes");
  }
  auto kind = kind_of(spec);
  if (!kind) {
    return invalid_spec(decode_spec::op, "from: " + kind.error().message());
  }
  if (spec.sample_rate < 0 || spec.sample_rate > 1000000) {
    return invalid_spec(decode_spec::op, "sample_rate must be in [0, 1000000]");
  }
  if (!(spec.max_duration >= 0.0 && spec.max_duration < 1e9)) {
    return invalid_spec(decode_spec::op, "max_duration must be >= 0 seconds (0: no limit)");
  }
  if (spec.gpu < 0 || spec.gpu > 63 || spec.gpu_lanes < 1 || spec.gpu_lanes > 64) {
    return invalid_spec(decode_spec::op, "gpu must be in [0, 63] and gpu_lanes in [1, 64]");
  }
  if (spec.on != decode_device::cpu && !decodes_to_image(*kind, spec)) {
    return invalid_spec(decode_spec::op,
                        "on = \"gpu\" or \"auto\" decodes JPEG images; this part is decoded to "
                        "an array, on the CPU (leave on out)");
  }
  return {};
}

expected<step_ptr> make_step(const decode_spec& spec, chain_fields& fields,
                             const transform_spec* next) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  const auto kind = *kind_of(spec);
  if (!decodes_to_image(kind, spec)) {
    return make_array_decode_step(spec, kind, fields);
  }
  auto gpu = offloaded_decode::open(spec);
  if (!gpu) {
    return std::move(gpu).error();
  }
  auto to = fields.write(spec.to, {field_kind::tensor, dtype::uint8, 3, {varies, varies, 3, 0}},
                         /*image=*/true);
  return step_ptr(std::make_unique<decode_step>(spec, to, reducible(spec, next), std::move(*gpu)));
}

}  // namespace conveyor
