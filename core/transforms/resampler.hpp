#pragma once
/// How resize and random_resized_crop turn a box of an image into their output: PIL's filters,
/// antialiased (core/transforms/antialiased_resize.hpp), or OpenCV's plain bilinear for
/// interpolation = "opencv_bilinear". Both also resample a box that was planned before
/// decoding from the image decoded at a reduced DCT scale (sample_state::crop_plan), sampling
/// where the resampling of the full-size image would.

#include <opencv2/core/mat.hpp>

#include "conveyor/error.hpp"
#include "core/transforms/antialiased_resize.hpp"
#include "core/transforms/crop_geometry.hpp"
#include "core/transforms/sample_state.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor {

/// Immutable; every method may be called concurrently.
class resampler {
 public:
  explicit resampler(interpolation interp);

  /// `box` of `image` (inside it) resized to `out`, into `dst`.
  void resize_box(const cv::Mat& image, const crop_box& box, cv::Size out, cv::Mat& dst) const;
  /// `plan.source_box`, from `image` decoded at `plan.decode_scale`, resized to `out`.
  /// Precondition: image is scaled_extent(plan.source, plan.decode_scale) large.
  void resize_planned(const cv::Mat& image, const planned_crop& plan, cv::Size out,
                      cv::Mat& dst) const;
  /// `image`, which a decode step planned for `step` (sample.crop_plan set), resized to
  /// `out`, into `dst`, and the plan cleared: the transform_error naming `step` and the sample
  /// when the image is not the size the plan promised.
  expected<void> resize_planned(sample_state& sample, const cv::Mat& image, std::string_view step,
                                cv::Size out, cv::Mat& dst) const;
  /// Whether a decode reduced in the DCT domain may serve this resampling: not for nearest,
  /// which picks source pixels (a reduced decode averages them).
  bool takes_reduced_decodes() const noexcept { return interp_ != interpolation::nearest; }

 private:
  interpolation interp_;
  resample_filter filter_;
};

/// `box` as an OpenCV rectangle.
inline cv::Rect to_rect(const crop_box& box) {
  return {box.left, box.top, box.width, box.height};
}

}  // namespace conveyor
