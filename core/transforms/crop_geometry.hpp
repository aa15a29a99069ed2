#pragma once
/// Where crops and resizes land, as pure integer geometry with torchvision's rounding. No
/// image is needed: a decoder can plan a reduced-size decode from the box before decoding.

#include <random>
#include <vector>

#include "core/codecs/scale_ratio.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor {

/// A box inside an image, in pixels.
struct crop_box {
  int left = 0;
  int top = 0;
  int width = 0;
  int height = 0;
};

inline bool operator==(const crop_box& a, const crop_box& b) noexcept {
  return a.left == b.left && a.top == b.top && a.width == b.width && a.height == b.height;
}

struct image_extent {
  int width = 0;
  int height = 0;
};

/// torchvision's RandomResizedCrop.get_params for a width x height image: up to 10 draws of
/// area fraction and log-uniform aspect ratio; the first box that fits is placed uniformly at
/// random. When none fits, the centred box of the whole image clamped to the ratio range.
/// Precondition: width, height > 0 and `params` valid (make_step checks). The box lies inside
/// the image. Pure apart from drawing from `rng`.
crop_box random_resized_crop_box(int width, int height, const rrc_params& params,
                                 std::mt19937_64& rng);

/// torchvision's CenterCrop offsets (Python's round, half to even) for a crop that fits:
/// Precondition: 0 < crop_width <= width, 0 < crop_height <= height.
crop_box center_crop_box(int width, int height, int crop_width, int crop_height);

/// torchvision's Resize(size) for an int size: the shorter side becomes `size`, the longer
/// one size * long / short rounded down. Precondition: all arguments > 0.
image_extent shorter_side_extent(int width, int height, int size);

/// maskrcnn_benchmark's Resize.get_size (maskrcnn_benchmark/data/transforms/transforms.py):
/// the shorter side becomes `size`, unless the longer would then pass `max_size`, in which
/// case the shorter becomes round(max_size * short / long) (Python's round, half to even);
/// an image whose shorter side is that size already stays as it is; the longer side is
/// int(size * long / short). Precondition: all arguments > 0.
image_extent bounded_shorter_side_extent(int width, int height, int size, int max_size);

/// The output size of `spec` for a `source` image: torchvision's Resize (shorter_side_extent
/// for an int size, bounded_shorter_side_extent with a max_size, else height x width).
/// Precondition: a spec that make_step accepts.
image_extent resize_extent(const resize_spec& spec, image_extent source);

/// The size of a `full` image decoded at `scale`, each side rounded up (as libjpeg does).
image_extent scaled_extent(image_extent full, scale_ratio scale);

/// One axis of an affine map from output pixels to source positions: src = dst * step + offset
/// (pixel centres at integers).
struct axis_mapping {
  double step = 1.0;
  double offset = 0.0;
};

/// Where each output pixel of `box` resized to `out` samples the image decoded at `scale`.
/// cv::resize samples the full image at (dst + 0.5) * box / out - 0.5 + box offset; a DCT-scaled
/// pixel i covers source pixels [i, i + 1) * denom / num, so source position u is decoded
/// position (u + 0.5) * num / denom - 0.5. Sampling the reduced image through this map lands
/// exactly where the full-size resize samples, with no rounding of the box to whole decoded
/// pixels (a quarter of a decoded pixel off costs ~13 dB of PSNR on smooth images at 1/8).
/// Every position lies in [0, decoded size - 1] when box * scale >= out. Precondition: box and
/// out non-empty, scale.denom > 0.
struct crop_mapping {
  axis_mapping x;
  axis_mapping y;
};
crop_mapping scaled_crop_mapping(const crop_box& box, image_extent out, scale_ratio scale);

/// The smallest of `candidates` at which `box` is still at least `out` in both dimensions
/// (box * scale >= out, exactly), so that the crop is resized down (or kept), never up; 1/1
/// when none is. Pure: the decoder passes the reductions it supports.
scale_ratio smallest_scale_for_crop(const crop_box& box, image_extent out,
                                    const std::vector<scale_ratio>& candidates);

/// The pixels of an image decoded at `scale` that resampling `box` (source coordinates) reads:
/// the decoded pixels it touches and one more on every side (OpenCV's bilinear samples
/// between a pixel and its neighbour), within the decoded image of a `source`-sized one.
/// Pure.
crop_box decoded_region_of(const crop_box& box, image_extent source, scale_ratio scale);

/// The reduction a decode plans for `box` resampled to `out`: smallest_scale_for_crop, except
/// that 1/2 is taken only where the box stays at least 1.25x `out` (else 1/1). At 1/2
/// libjpeg-turbo makes the chroma of a 4:2:0 JPEG with its IDCT at the stored resolution,
/// without the full decode's upsampler: sharper chroma than PIL sees, by up to 10 dB on hard
/// colour edges (33 dB against torchvision where the resampler had nothing left to reduce);
/// a 1.25x reduction after it blurs the difference away (43+ dB). At 1/4 and 1/8 the chroma
/// comes out of smaller, already low-passing IDCTs. Pure.
scale_ratio planned_decode_scale(const crop_box& box, image_extent out,
                                 const std::vector<scale_ratio>& candidates);

}  // namespace conveyor
