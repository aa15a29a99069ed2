// The geometric steps: random_resized_crop, resize and center_crop.

#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "core/transforms/crop_geometry.hpp"
#include "core/transforms/spec_checks.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

cv::Rect to_rect(const crop_box& box) {
  return {box.left, box.top, box.width, box.height};
}

class random_resized_crop_step final : public image_step {
 public:
  random_resized_crop_step(const random_resized_crop_spec& spec, int interpolation)
      : params_(spec.params), size_(spec.width, spec.height), interpolation_(interpolation) {}

  std::string_view name() const noexcept override { return random_resized_crop_spec::op; }

 protected:
  expected<void> apply_to_image(sample_state& sample, std::mt19937_64& rng) const override {
    cv::Mat out;
    if (sample.crop_plan) {
      if (auto ok = resample_planned(sample, out); !ok) {
        return ok;
      }
      sample.crop_plan.reset();
    } else {
      resize_box(sample.image,
                 random_resized_crop_box(sample.image.cols, sample.image.rows, params_, rng), out);
    }
    sample.image = std::move(out);
    return {};
  }

 private:
  void resize_box(const cv::Mat& image, const crop_box& box, cv::Mat& out) const {
    cv::resize(image(to_rect(box)), out, size_, 0, 0, interpolation_);
  }

  /// The box the decode step drew for this step (with this step's rng), from the image as it
  /// was decoded. At 1/1 exactly what drawing the box here gives; reduced, the output pixels
  /// sample the reduced image where the full-size resize would sample the full one, through an
  /// affine warp: rounding the box to whole decoded pixels would shift it by up to half a
  /// decoded pixel (4 source pixels at 1/8). warpAffine treats INTER_AREA as bilinear; the
  /// reduced box is less than twice the output in the usual case, where the two barely differ.
  expected<void> resample_planned(const sample_state& sample, cv::Mat& out) const {
    const planned_crop& plan = *sample.crop_plan;
    image_extent decoded = scaled_extent(plan.source, plan.decode_scale);
    if (decoded.width != sample.image.cols || decoded.height != sample.image.rows) {
      return sample_error(errc::transform_error, sample, name(),
                          "the image is " + std::to_string(sample.image.cols) + "x" +
                              std::to_string(sample.image.rows) + ", the decode step planned " +
                              std::to_string(decoded.width) + "x" + std::to_string(decoded.height));
    }
    if (plan.decode_scale == scale_ratio{}) {
      resize_box(sample.image, plan.source_box, out);
      return {};
    }
    crop_mapping map =
        scaled_crop_mapping(plan.source_box, {size_.width, size_.height}, plan.decode_scale);
    cv::Matx23d inverse(map.x.step, 0, map.x.offset, 0, map.y.step, map.y.offset);
    cv::warpAffine(sample.image, out, inverse, size_, interpolation_ | cv::WARP_INVERSE_MAP,
                   cv::BORDER_REPLICATE);
    return {};
  }

  rrc_params params_;
  cv::Size size_;
  int interpolation_;
};

class resize_step final : public image_step {
 public:
  resize_step(const resize_spec& spec, int interpolation)
      : shorter_side_(spec.size), size_(spec.width, spec.height), interpolation_(interpolation) {}

  std::string_view name() const noexcept override { return resize_spec::op; }

 protected:
  expected<void> apply_to_image(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    cv::Size target = size_;
    if (shorter_side_ > 0) {
      image_extent e = shorter_side_extent(sample.image.cols, sample.image.rows, shorter_side_);
      target = {e.width, e.height};
    }
    if (target == sample.image.size()) {
      return {};  // torchvision also returns such an image untouched
    }
    cv::Mat out;
    cv::resize(sample.image, out, target, 0, 0, interpolation_);
    sample.image = std::move(out);
    return {};
  }

 private:
  int shorter_side_;  // > 0: keep the aspect ratio; 0: resize to size_
  cv::Size size_;
  int interpolation_;
};

class center_crop_step final : public image_step {
 public:
  explicit center_crop_step(const center_crop_spec& spec) : size_(spec.width, spec.height) {}

  std::string_view name() const noexcept override { return center_crop_spec::op; }

 protected:
  expected<void> apply_to_image(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    cv::Mat padded = pad_to_crop(sample.image);
    crop_box box = center_crop_box(padded.cols, padded.rows, size_.width, size_.height);
    // A copy rather than a view: a view would keep the whole decoded image alive for as long
    // as the sample waits in queues.
    sample.image = padded(to_rect(box)).clone();
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

  cv::Size size_;
};

}  // namespace

expected<step_ptr> make_step(const random_resized_crop_spec& spec) {
  constexpr auto op = random_resized_crop_spec::op;
  if (auto ok = first_failure({require_positive(op, "height", spec.height),
                               require_positive(op, "width", spec.width),
                               require_range(op, "scale", spec.params.scale),
                               require_range(op, "ratio", spec.params.ratio)});
      !ok) {
    return std::move(ok).error();
  }
  auto interpolation = opencv_interpolation(op, spec.interp);
  if (!interpolation) {
    return std::move(interpolation).error();
  }
  return step_ptr(std::make_unique<random_resized_crop_step>(spec, *interpolation));
}

expected<step_ptr> make_step(const resize_spec& spec) {
  constexpr auto op = resize_spec::op;
  if (spec.size != 0 && (spec.height != 0 || spec.width != 0)) {
    return invalid_spec(op, "give either size (shorter side) or height and width, not both");
  }
  if (spec.size == 0 && spec.height == 0 && spec.width == 0) {
    return invalid_spec(op, "give size (shorter side) or height and width");
  }
  auto sizes = spec.size != 0 ? require_positive(op, "size", spec.size)
                              : first_failure({require_positive(op, "height", spec.height),
                                               require_positive(op, "width", spec.width)});
  if (!sizes) {
    return std::move(sizes).error();
  }
  auto interpolation = opencv_interpolation(op, spec.interp);
  if (!interpolation) {
    return std::move(interpolation).error();
  }
  return step_ptr(std::make_unique<resize_step>(spec, *interpolation));
}

expected<step_ptr> make_step(const center_crop_spec& spec) {
  constexpr auto op = center_crop_spec::op;
  if (auto ok = first_failure(
          {require_positive(op, "height", spec.height), require_positive(op, "width", spec.width)});
      !ok) {
    return std::move(ok).error();
  }
  return step_ptr(std::make_unique<center_crop_step>(spec));
}

}  // namespace conveyor
