#include "core/transforms/crop_geometry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace conveyor {
namespace {

/// Python's round() on doubles: halves go to the even neighbour. nearbyint does exactly that
/// under the default rounding mode, which nothing in Conveyor changes.
int python_round(double x) {
  return static_cast<int>(std::nearbyint(x));
}

/// cv::resize's map from `out` pixels onto `length` pixels from `start`, through `scale`.
axis_mapping scaled_axis(int start, int length, int out, scale_ratio scale) {
  double s = static_cast<double>(scale.num) / scale.denom;
  double per_output = static_cast<double>(length) / out;
  return {per_output * s, (start + 0.5 * per_output) * s - 0.5};
}

bool covers(int length, int out, scale_ratio scale) {
  return std::int64_t{length} * scale.num >= std::int64_t{out} * scale.denom;
}

/// The whole image, narrowed to the nearest aspect ratio inside the range, centred.
crop_box fallback_box(int width, int height, const rrc_params& params) {
  double in_ratio = static_cast<double>(width) / height;
  int w = width;
  int h = height;
  if (in_ratio < params.ratio[0]) {
    h = python_round(w / params.ratio[0]);
  } else if (in_ratio > params.ratio[1]) {
    w = python_round(h * params.ratio[1]);
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

}  // namespace

crop_box random_resized_crop_box(int width, int height, const rrc_params& params,
                                 std::mt19937_64& rng) {
  const double area = static_cast<double>(width) * height;
  std::uniform_real_distribution<double> area_fraction(params.scale[0], params.scale[1]);
  std::uniform_real_distribution<double> log_ratio(std::log(params.ratio[0]),
                                                   std::log(params.ratio[1]));
  for (int attempt = 0; attempt < 10; ++attempt) {
    double target_area = area * area_fraction(rng);
    double aspect = std::exp(log_ratio(rng));
    int w = python_round(std::sqrt(target_area * aspect));
    int h = python_round(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      int top = std::uniform_int_distribution<int>(0, height - h)(rng);
      int left = std::uniform_int_distribution<int>(0, width - w)(rng);
      return {left, top, w, h};
    }
  }
  return fallback_box(width, height, params);
}

crop_box center_crop_box(int width, int height, int crop_width, int crop_height) {
  return {python_round((width - crop_width) / 2.0), python_round((height - crop_height) / 2.0),
          crop_width, crop_height};
}

image_extent shorter_side_extent(int width, int height, int size) {
  int shorter = std::min(width, height);
  int longer = std::max(width, height);
  // Integer floor equals Python's int(size * long / short) for any image size that fits in int.
  auto scaled_longer = static_cast<int>(std::int64_t{size} * longer / shorter);
  return width <= height ? image_extent{size, scaled_longer} : image_extent{scaled_longer, size};
}

image_extent bounded_shorter_side_extent(int width, int height, int size, int max_size) {
  const double shorter = std::min(width, height);
  const double longer = std::max(width, height);
  if (longer / shorter * size > max_size) {
    size = python_round(max_size * shorter / longer);
  }
  if ((width <= height && width == size) || (height <= width && height == size)) {
    return {width, height};
  }
  if (width < height) {
    return {size, static_cast<int>(static_cast<double>(std::int64_t{size} * height) / width)};
  }
  return {static_cast<int>(static_cast<double>(std::int64_t{size} * width) / height), size};
}

image_extent resize_extent(const resize_spec& spec, image_extent source) {
  if (spec.size > 0 && spec.max_size > 0) {
    return bounded_shorter_side_extent(source.width, source.height, spec.size, spec.max_size);
  }
  if (spec.size > 0) {
    return shorter_side_extent(source.width, source.height, spec.size);
  }
  return {spec.width, spec.height};
}

image_extent scaled_extent(image_extent full, scale_ratio scale) {
  return {scaled_length(full.width, scale), scaled_length(full.height, scale)};
}

crop_mapping scaled_crop_mapping(const crop_box& box, image_extent out, scale_ratio scale) {
  return {scaled_axis(box.left, box.width, out.width, scale),
          scaled_axis(box.top, box.height, out.height, scale)};
}

scale_ratio smallest_scale_for_crop(const crop_box& box, image_extent out,
                                    const std::vector<scale_ratio>& candidates) {
  scale_ratio best;
  for (const auto& scale : candidates) {
    if (smaller_scale(scale, best) && covers(box.width, out.width, scale) &&
        covers(box.height, out.height, scale)) {
      best = scale;
    }
  }
  return best;
}

scale_ratio planned_decode_scale(const crop_box& box, image_extent out,
                                 const std::vector<scale_ratio>& candidates) {
  constexpr scale_ratio half{1, 2};
  scale_ratio scale = smallest_scale_for_crop(box, out, candidates);
  if (scale != half) {
    return scale;
  }
  // 1.25x the output, rounded up: the box must cover it at 1/2.
  image_extent wider{(out.width * 5 + 3) / 4, (out.height * 5 + 3) / 4};
  return smallest_scale_for_crop(box, wider, {half});
}

crop_box decoded_region_of(const crop_box& box, image_extent source, scale_ratio scale) {
  const image_extent decoded = scaled_extent(source, scale);
  // Source edge u lies at u * num / denom in the decoded image (floor and ceil exactly).
  auto down = [&](int u) { return static_cast<int>(std::int64_t{u} * scale.num / scale.denom); };
  auto up = [&](int u) {
    return static_cast<int>((std::int64_t{u} * scale.num + scale.denom - 1) / scale.denom);
  };
  const int left = std::max(0, down(box.left) - 1);
  const int top = std::max(0, down(box.top) - 1);
  const int right = std::min(decoded.width, up(box.left + box.width) + 1);
  const int bottom = std::min(decoded.height, up(box.top + box.height) + 1);
  return {left, top, right - left, bottom - top};
}

}  // namespace conveyor
