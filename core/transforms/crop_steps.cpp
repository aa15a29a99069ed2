// The geometric steps: random_resized_crop, resize and center_crop.

#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "core/transforms/crop_geometry.hpp"
#include "core/transforms/resampler.hpp"
#include "core/transforms/spec_checks.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

class random_resized_crop_step final : public image_step {
 public:
  explicit random_resized_crop_step(const random_resized_crop_spec& spec)
      : params_(spec.params), size_(spec.width, spec.height), resample_(spec.interp) {}

  std::string_view name() const noexcept override { return random_resized_crop_spec::op; }

 protected:
  expected<void> apply_to_image(sample_state& sample, std::mt19937_64& rng) const override {
    cv::Mat out;
    if (sample.crop_plan) {
      // The box the decode step drew for this step (with this step's rng).
      if (auto ok = resample_.resize_planned(sample, name(), size_, out); !ok) {
        return ok;
      }
    } else {
      resample_.resize_box(sample.image,
                           crop_box_for(sample, sample.image.cols, sample.image.rows, params_, rng),
                           size_, out);
    }
    sample.image = std::move(out);
    return {};
  }

 private:
  rrc_params params_;
  cv::Size size_;
  resampler resample_;
};

class resize_step final : public image_step {
 public:
  explicit resize_step(const resize_spec& spec) : spec_(spec), resample_(spec.interp) {}

  std::string_view name() const noexcept override { return resize_spec::op; }

 protected:
  expected<void> apply_to_image(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    cv::Mat out;
    if (sample.crop_plan) {
      // Decoded reduced for this step: the output size is the full-size image's.
      image_extent target = resize_extent(spec_, sample.crop_plan->source);
      if (auto ok = resample_.resize_planned(sample, name(), {target.width, target.height}, out);
          !ok) {
        return ok;
      }
    } else {
      image_extent target = resize_extent(spec_, {sample.image.cols, sample.image.rows});
      if (target.width == sample.image.cols && target.height == sample.image.rows) {
        return {};  // torchvision also returns such an image untouched
      }
      resample_.resize_box(sample.image, {0, 0, sample.image.cols, sample.image.rows},
                           {target.width, target.height}, out);
    }
    sample.image = std::move(out);
    return {};
  }

 private:
  resize_spec spec_;
  resampler resample_;
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
  if (auto ok = first_failure(
          {require_positive(op, "height", spec.height), require_positive(op, "width", spec.width),
           require_range(op, "scale", spec.params.scale),
           require_range(op, "ratio", spec.params.ratio), require_interpolation(op, spec.interp)});
      !ok) {
    return std::move(ok).error();
  }
  return step_ptr(std::make_unique<random_resized_crop_step>(spec));
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
  if (auto ok = first_failure({sizes, require_interpolation(op, spec.interp)}); !ok) {
    return std::move(ok).error();
  }
  return step_ptr(std::make_unique<resize_step>(spec));
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
