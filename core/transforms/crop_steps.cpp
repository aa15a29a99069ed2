// The geometric steps: random_resized_crop, resize and center_crop.

#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "core/transforms/crop_geometry.hpp"
#include "core/transforms/geometry_followers.hpp"
#include "core/transforms/resampler.hpp"
#include "core/transforms/spec_checks.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

class random_resized_crop_step final : public image_step {
 public:
  random_resized_crop_step(const random_resized_crop_spec& spec, std::size_t image,
                           geometry_followers followers)
      : image_step(image),
        params_(spec.params),
        size_(spec.width, spec.height),
        resample_(spec.interp),
        followers_(std::move(followers)) {}

  std::string_view name() const noexcept override { return random_resized_crop_spec::op; }

 protected:
  expected<void> apply_to_image(sample_state& sample, std::mt19937_64& rng) const override {
    cv::Mat out;
    cv::Mat& in = image(sample);
    crop_box box;
    image_extent source{in.cols, in.rows};
    if (sample.crop_plan) {
      // The box the decode step drew for this step (with this step's rng).
      box = sample.crop_plan->source_box;
      source = sample.crop_plan->source;
      if (auto ok = resample_.resize_planned(sample, in, name(), size_, out); !ok) {
        return ok;
      }
    } else {
      box = crop_box_for(sample, in.cols, in.rows, params_, rng);
      resample_.resize_box(in, box, size_, out);
    }
    if (auto ok = followers_.crop_resize(sample, name(), box, source, {size_.width, size_.height});
        !ok) {
      return ok;
    }
    in = std::move(out);
    return {};
  }

 private:
  rrc_params params_;
  cv::Size size_;
  resampler resample_;
  geometry_followers followers_;
};

class resize_step final : public image_step {
 public:
  resize_step(const resize_spec& spec, std::size_t image, geometry_followers followers)
      : image_step(image), spec_(spec), resample_(spec.interp), followers_(std::move(followers)) {}

  std::string_view name() const noexcept override { return resize_spec::op; }

 protected:
  expected<void> apply_to_image(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    cv::Mat out;
    cv::Mat& in = image(sample);
    image_extent source{in.cols, in.rows};
    image_extent target;
    if (sample.crop_plan) {
      // Decoded reduced for this step: the output size is the full-size image's.
      source = sample.crop_plan->source;
      target = resize_extent(spec_, source);
      if (auto ok =
              resample_.resize_planned(sample, in, name(), {target.width, target.height}, out);
          !ok) {
        return ok;
      }
    } else {
      target = resize_extent(spec_, source);
      if (target.width == source.width && target.height == source.height) {
        return {};  // torchvision also returns such an image untouched
      }
      resample_.resize_box(in, {0, 0, source.width, source.height}, {target.width, target.height},
                           out);
    }
    if (auto ok = followers_.crop_resize(sample, name(), {0, 0, source.width, source.height},
                                         source, target);
        !ok) {
      return ok;
    }
    in = std::move(out);
    return {};
  }

 private:
  resize_spec spec_;
  resampler resample_;
  geometry_followers followers_;
};

class center_crop_step final : public image_step {
 public:
  center_crop_step(const center_crop_spec& spec, std::size_t image, geometry_followers followers)
      : image_step(image), size_(spec.width, spec.height), followers_(std::move(followers)) {}

  std::string_view name() const noexcept override { return center_crop_spec::op; }

 protected:
  expected<void> apply_to_image(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    cv::Mat& in = image(sample);
    const image_extent source{in.cols, in.rows};
    const crop_box box = padded_center_box(source);
    if (auto ok = followers_.crop_resize(sample, name(), box, source, {size_.width, size_.height});
        !ok) {
      return ok;
    }
    cv::Mat padded = pad_to_crop(in);
    crop_box inside = center_crop_box(padded.cols, padded.rows, size_.width, size_.height);
    // A copy rather than a view: a view would keep the whole decoded image alive for as long
    // as the sample waits in queues.
    in = padded(to_rect(inside)).clone();
    return {};
  }

 private:
  /// torchvision's zero padding when the crop is larger than the image: half on each side,
  /// the odd pixel going to the right and bottom.
  cv::Mat pad_to_crop(const cv::Mat& image) const {
    int pad_x = std::max(0, size_.width - image.cols);
    int pad_y = std::max(0, size_.height - image.rows);
    if (pad_x == 0 && pad_y == 0) {
      return image;
    }
    cv::Mat padded;
    cv::copyMakeBorder(image, padded, pad_y / 2, (pad_y + 1) / 2, pad_x / 2, (pad_x + 1) / 2,
                       cv::BORDER_CONSTANT, cv::Scalar::all(0));
    return padded;
  }

  /// The crop's box in the unpadded image's coordinates (it may reach past the image).
  crop_box padded_center_box(image_extent source) const {
    const int pad_x = std::max(0, size_.width - source.width);
    const int pad_y = std::max(0, size_.height - source.height);
    crop_box box =
        center_crop_box(source.width + pad_x, source.height + pad_y, size_.width, size_.height);
    box.left -= pad_x / 2;
    box.top -= pad_y / 2;
    return box;
  }

  cv::Size size_;
  geometry_followers followers_;
};

}  // namespace

expected<void> check_params(const random_resized_crop_spec& spec) {
  constexpr auto op = random_resized_crop_spec::op;
  return first_failure(
      {require_positive(op, "height", spec.height), require_positive(op, "width", spec.width),
       require_range(op, "scale", spec.params.scale), require_range(op, "ratio", spec.params.ratio),
       require_interpolation(op, spec.interp)});
}

expected<step_ptr> make_step(const random_resized_crop_spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  auto bound = bind_geometry(spec.fields, fields);
  if (!bound) {
    return std::move(bound).error();
  }
  set_image_size(fields, bound->image, spec.height, spec.width);
  return step_ptr(
      std::make_unique<random_resized_crop_step>(spec, bound->image, std::move(bound->followers)));
}

expected<void> check_params(const resize_spec& spec) {
  constexpr auto op = resize_spec::op;
  if (spec.size != 0 && (spec.height != 0 || spec.width != 0)) {
    return invalid_spec(op, "give either size (shorter side) or height and width, not both");
  }
  if (spec.size == 0 && spec.height == 0 && spec.width == 0) {
    return invalid_spec(op, "give size (shorter side) or height and width");
  }
  if (spec.max_size != 0 && (spec.size == 0 || spec.max_size < spec.size)) {
    return invalid_spec(op,
                        "max_size bounds the longer side of a shorter-side resize: it needs "
                        "size, and max_size >= size");
  }
  auto sizes = spec.size != 0 ? require_positive(op, "size", spec.size)
                              : first_failure({require_positive(op, "height", spec.height),
                                               require_positive(op, "width", spec.width)});
  return first_failure({sizes, require_interpolation(op, spec.interp)});
}

expected<step_ptr> make_step(const resize_spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  auto bound = bind_geometry(spec.fields, fields);
  if (!bound) {
    return std::move(bound).error();
  }
  const bool fixed = spec.size == 0;
  set_image_size(fields, bound->image, fixed ? spec.height : varies, fixed ? spec.width : varies);
  return step_ptr(std::make_unique<resize_step>(spec, bound->image, std::move(bound->followers)));
}

expected<void> check_params(const center_crop_spec& spec) {
  constexpr auto op = center_crop_spec::op;
  return first_failure(
      {require_positive(op, "height", spec.height), require_positive(op, "width", spec.width)});
}

expected<step_ptr> make_step(const center_crop_spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  auto bound = bind_geometry(spec.fields, fields);
  if (!bound) {
    return std::move(bound).error();
  }
  set_image_size(fields, bound->image, spec.height, spec.width);
  return step_ptr(
      std::make_unique<center_crop_step>(spec, bound->image, std::move(bound->followers)));
}

}  // namespace conveyor
