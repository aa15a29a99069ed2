#pragma once
/// One transform step built as the next of a chain whose fields so far are "label" and "image"
/// (an RGB image of any size, as a decode leaves it): how the step tests build and run steps on
/// their own. Header-only.

#include <cstddef>

#include <opencv2/core.hpp>

#include "core/transforms/chain_fields.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor::testing {

/// The index of "image" in image_fields().
inline constexpr std::size_t image_field = 1;

/// A chain's fields after a decode: "label" and "image".
inline chain_fields image_fields() {
  chain_fields fields;
  fields.write("image", {field_kind::tensor, dtype::uint8, 3, {varies, varies, 3, 0}}, true);
  return fields;
}

/// The step of `spec` after a decode (a decode builds as the first step).
inline expected<step_ptr> step_of(const transform_spec& spec) {
  auto fields = std::holds_alternative<decode_spec>(spec) ? chain_fields() : image_fields();
  return make_step(spec, fields, nullptr);
}

/// A sample with the fields of image_fields() and `image` in "image" (id 42, a key).
inline sample_state sample_with_image(cv::Mat image) {
  sample_state s;
  s.sample_id = 42;
  s.key = "train/n01440764/img_42.jpg";
  s.fields.resize(image_fields().size());
  s.fields[image_field].set(std::move(image));
  return s;
}

/// A sample with the fields of image_fields(), the image not decoded yet.
inline sample_state sample_with_bytes(std::vector<std::uint8_t> encoded) {
  sample_state s;
  s.encoded = std::move(encoded);
  s.fields.resize(image_fields().size());
  return s;
}

inline cv::Mat& image_of(sample_state& s) {
  return s.fields[image_field].image;
}

/// The "image" field's array, once to_uint8 or normalize made it.
inline host_array& array_of(sample_state& s) {
  return s.fields[image_field].array;
}

}  // namespace conveyor::testing
