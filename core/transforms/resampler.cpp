#include "core/transforms/resampler.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <opencv2/imgproc.hpp>

#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

resample_filter filter_of(interpolation interp) {
  switch (interp) {
    case interpolation::nearest:
      return resample_filter::nearest;
    case interpolation::bicubic:
      return resample_filter::bicubic;
    case interpolation::area:
      return resample_filter::box;
    case interpolation::bilinear:
    case interpolation::opencv_bilinear:
      break;
  }
  return resample_filter::bilinear;
}

}  // namespace

resampler::resampler(interpolation interp) : interp_(interp), filter_(filter_of(interp)) {}

void resampler::resize_box(const cv::Mat& image, const crop_box& box, cv::Size out,
                           cv::Mat& dst) const {
  if (interp_ == interpolation::opencv_bilinear) {
    cv::resize(image(to_rect(box)), dst, out, 0, 0, cv::INTER_LINEAR);
    return;
  }
  // torchvision crops, then resizes the crop: the filters see no pixel outside the box.
  cv::Mat crop = image(to_rect(box));
  antialiased_resize(crop, whole(crop), out, filter_, dst);
}

// A DCT-scaled pixel i covers source pixels [i, i + 1) * denom / num: a source edge u lies at
// u * num / denom in the decoded image. PIL's filters take that fractional region as it is;
// OpenCV's bilinear samples it through an affine warp (rounding the box to whole decoded pixels
// would shift it by up to half a decoded pixel: ~13 dB of PSNR on smooth images at 1/8).
void resampler::resize_planned(const cv::Mat& image, const planned_crop& plan, cv::Size out,
                               cv::Mat& dst) const {
  const auto& box = plan.source_box;
  const auto& held = plan.decoded;  // the part of the decoded image that `image` is
  if (plan.decode_scale == scale_ratio{}) {
    resize_box(image, {box.left - held.left, box.top - held.top, box.width, box.height}, out, dst);
    return;
  }
  if (interp_ != interpolation::opencv_bilinear) {
    // The decoded pixels the box touches, as the crop; the box within them, fractional.
    const double s = static_cast<double>(plan.decode_scale.num) / plan.decode_scale.denom;
    const source_region r{box.left * s - held.left, box.top * s - held.top,
                          (box.left + box.width) * s - held.left,
                          (box.top + box.height) * s - held.top};
    const int left = static_cast<int>(std::floor(r.left));
    const int top = static_cast<int>(std::floor(r.top));
    const int right = std::min(static_cast<int>(std::ceil(r.right)), image.cols);
    const int bottom = std::min(static_cast<int>(std::ceil(r.bottom)), image.rows);
    cv::Mat crop = image(cv::Rect(left, top, right - left, bottom - top));
    antialiased_resize(crop, {r.left - left, r.top - top, r.right - left, r.bottom - top}, out,
                       filter_, dst);
    return;
  }
  crop_mapping map = scaled_crop_mapping(box, {out.width, out.height}, plan.decode_scale);
  cv::Matx23d inverse(map.x.step, 0, map.x.offset - held.left, 0, map.y.step,
                      map.y.offset - held.top);
  cv::warpAffine(image, dst, inverse, out, cv::INTER_LINEAR | cv::WARP_INVERSE_MAP,
                 cv::BORDER_REPLICATE);
}

expected<void> resampler::resize_planned(sample_state& sample, const cv::Mat& image,
                                         std::string_view step, cv::Size out, cv::Mat& dst) const {
  const auto& held = sample.crop_plan->decoded;
  if (held.width != image.cols || held.height != image.rows) {
    return sample_error(errc::transform_error, sample, step,
                        "the image is " + std::to_string(image.cols) + "x" +
                            std::to_string(image.rows) + ", the decode step planned " +
                            std::to_string(held.width) + "x" + std::to_string(held.height));
  }
  resize_planned(image, *sample.crop_plan, out, dst);
  sample.crop_plan.reset();
  return {};
}

}  // namespace conveyor
