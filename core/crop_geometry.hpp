#pragma once
/// Where crops and resizes land, as pure integer geometry with torchvision's rounding. No
/// image is needed: a decoder can plan a reduced-size decode from the box before decoding.

#include <random>

#include "core/transform_spec.hpp"

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

}  // namespace conveyor
