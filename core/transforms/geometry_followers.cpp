#include "core/transforms/geometry_followers.hpp"

#include <algorithm>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

bool is_boxes(const field_type& t) {
  return t.kind == field_kind::tensor && t.type == dtype::float32 && t.rank == 2 && t.shape[1] == 4;
}

float clamp_to(float v, int extent) {
  return std::clamp(v, 0.0F, static_cast<float>(extent));
}

// `mask`'s pixels under `box` (zero where the box leaves it), then resized to `out`.
cv::Mat cut_mask(const cv::Mat& mask, const crop_box& box, image_extent out) {
  cv::Mat cut = cv::Mat::zeros(box.height, box.width, mask.type());
  const cv::Rect inside =
      cv::Rect(box.left, box.top, box.width, box.height) & cv::Rect(0, 0, mask.cols, mask.rows);
  if (inside.area() > 0) {
    mask(inside).copyTo(
        cut(cv::Rect(inside.x - box.left, inside.y - box.top, inside.width, inside.height)));
  }
  if (out.width == box.width && out.height == box.height) {
    return cut;
  }
  cv::Mat resized;
  cv::resize(cut, resized, cv::Size(out.width, out.height), 0, 0, cv::INTER_NEAREST);
  return resized;
}

}  // namespace

expected<std::size_t> bind_image(const std::string& name, const chain_fields& fields) {
  auto index = fields.read(name);
  if (!index) {
    return index;
  }
  if (!fields.image(*index)) {
    return error{errc::invalid_config,
                 "field '" + name + "' is " + describe(fields.type(*index)) +
                     ", not an image (an image comes from a decode of jpg, png and the like, "
                     "before to_uint8 or normalize)"};
  }
  return *index;
}

void set_image_size(chain_fields& fields, std::size_t index, std::int64_t height,
                    std::int64_t width) {
  auto type = fields.type(index);
  type.shape[0] = height;
  type.shape[1] = width;
  fields.write(fields.name(index), type, /*image=*/true);
}

expected<geometry_followers> geometry_followers::bind(const geometry_fields& names,
                                                      const chain_fields& fields) {
  geometry_followers out;
  for (std::size_t i = 1; i < names.size(); ++i) {
    auto index = fields.read(names[i]);
    if (!index) {
      return std::move(index).error();
    }
    if (fields.image(*index)) {
      out.masks_.push_back(*index);
    } else if (is_boxes(fields.type(*index))) {
      out.boxes_.push_back(*index);
    } else {
      return error{errc::invalid_config,
                   "field '" + names[i] + "' is " + describe(fields.type(*index)) +
                       ": a field that moves with the image must be boxes (float32 [?, 4]: x0, "
                       "y0, x1, y1) or an image (a mask)"};
    }
  }
  return out;
}

expected<bound_geometry> bind_geometry(const geometry_fields& names, const chain_fields& fields) {
  if (names.empty()) {
    return error{errc::invalid_config, "fields is empty (name its image)"};
  }
  auto image = bind_image(names.front(), fields);
  if (!image) {
    return std::move(image).error();
  }
  auto followers = geometry_followers::bind(names, fields);
  if (!followers) {
    return std::move(followers).error();
  }
  return bound_geometry{*image, std::move(*followers)};
}

void geometry_followers::flip(sample_state& s, int width) const {
  for (auto i : boxes_) {
    auto& a = s.fields[i].array;
    auto* b = a.data<float>();
    for (std::int64_t r = 0; r < a.extent(0); ++r, b += 4) {
      const float x0 = b[0];
      b[0] = static_cast<float>(width) - b[2];
      b[2] = static_cast<float>(width) - x0;
    }
  }
  for (auto i : masks_) {
    cv::Mat flipped;
    cv::flip(s.fields[i].image, flipped, 1);
    s.fields[i].image = std::move(flipped);
  }
}

expected<void> geometry_followers::crop_resize(sample_state& s, std::string_view op,
                                               const crop_box& box, image_extent source,
                                               image_extent out) const {
  const float sx = static_cast<float>(out.width) / static_cast<float>(box.width);
  const float sy = static_cast<float>(out.height) / static_cast<float>(box.height);
  for (auto i : boxes_) {
    auto& a = s.fields[i].array;
    auto* b = a.data<float>();
    for (std::int64_t r = 0; r < a.extent(0); ++r, b += 4) {
      b[0] = clamp_to((b[0] - static_cast<float>(box.left)) * sx, out.width);
      b[1] = clamp_to((b[1] - static_cast<float>(box.top)) * sy, out.height);
      b[2] = clamp_to((b[2] - static_cast<float>(box.left)) * sx, out.width);
      b[3] = clamp_to((b[3] - static_cast<float>(box.top)) * sy, out.height);
    }
  }
  for (auto i : masks_) {
    const auto& mask = s.fields[i].image;
    if (mask.cols != source.width || mask.rows != source.height) {
      return sample_error(errc::transform_error, s, op,
                          "a mask of " + std::to_string(mask.cols) + "x" +
                              std::to_string(mask.rows) + " beside an image of " +
                              std::to_string(source.width) + "x" + std::to_string(source.height));
    }
    s.fields[i].image = cut_mask(mask, box, out);
  }
  return {};
}

}  // namespace conveyor
