#pragma once
/// Resampling as PIL's Image.resize does it, which is what torchvision's Resize and resized_crop
/// do to PIL images (and its tensor path with antialias=True, to rounding): each output pixel
/// is a weighted sum of the source pixels under a filter stretched by the downscale factor, so
/// a large downscale low-passes instead of aliasing (OpenCV's bilinear resize samples 2x2
/// pixels whatever the factor: a 3000 px photo brought to 256 px aliases, 30 dB from PIL's).
///
/// Separable: a horizontal pass into 8-bit rows, then a vertical one, in 22-bit fixed point
/// with PIL's rounding; the same bytes as PIL for the same input and region. The region may be
/// fractional: a crop box mapped onto an image decoded at a reduced DCT scale.

#include <cstdint>

#include <opencv2/core/mat.hpp>

namespace conveyor {

/// PIL's filters: NEAREST (no weights: the pixel under the sample point), BOX (area
/// averaging), BILINEAR (triangle) and BICUBIC (Keys, a = -0.5).
enum class resample_filter : std::uint8_t { nearest, box, bilinear, bicubic };

/// A region of an image in pixel-edge coordinates: [left, right) x [top, bottom), 0 at the
/// image's left and top edges.
struct source_region {
  double left = 0;
  double top = 0;
  double right = 0;
  double bottom = 0;
};

/// `region` of `src` (HWC uint8 with 1 to 4 channels, continuous or not) resampled to `out`
/// with `filter`, into `dst` (reallocated as needed). Precondition: out is not empty, and the
/// region is not empty and lies within the image. Thread-safe (buffers are per thread).
void antialiased_resize(const cv::Mat& src, const source_region& region, cv::Size out,
                        resample_filter filter, cv::Mat& dst);

/// The whole of `image` as a region.
inline source_region whole(const cv::Mat& image) {
  return {0, 0, static_cast<double>(image.cols), static_cast<double>(image.rows)};
}

}  // namespace conveyor
