// The final steps that turn the image into the output tensor: normalize and to_uint8.

#include <cmath>
#include <vector>

#include <opencv2/core.hpp>

#include "core/transforms/geometry_followers.hpp"
#include "core/transforms/normalize_table.hpp"
#include "core/transforms/spec_checks.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

/// A uint8 CHW array of `image`'s shape, and Mats that wrap its channel planes, so that
/// OpenCV writes straight into the array (no copy after the fact).
host_array planar_array(const cv::Mat& image, std::vector<cv::Mat>& planes) {
  host_array out =
      host_array::uninitialized(dtype::uint8, {image.channels(), image.rows, image.cols});
  const std::size_t plane_elements = static_cast<std::size_t>(image.rows) * image.cols;
  planes.clear();
  for (int c = 0; c < image.channels(); ++c) {
    planes.emplace_back(image.rows, image.cols, CV_8UC1,
                        out.data<std::uint8_t>() + static_cast<std::size_t>(c) * plane_elements);
  }
  return out;
}

error wrong_image_type(const sample_state& sample, const cv::Mat& image, std::string_view step,
                       std::string_view want) {
  return sample_error(
      errc::transform_error, sample, step,
      std::string("expects ") + std::string(want) + ", got " + cv::typeToString(image.type()));
}

class normalize_step final : public image_step {
 public:
  // One pass from the interleaved RGB image to the CHW planes through normalize_table: the
  // bits of normalize_value() (the arithmetic the CPU reference and the CUDA kernel use), with
  // no split into planes, no temporary and no zeroing of the tensor first.
  normalize_step(const normalize_spec& spec, std::size_t field)
      : image_step(field), table_(coefficients_of(spec)) {}

  std::string_view name() const noexcept override { return normalize_spec::op; }

 protected:
  expected<void> apply_to_image(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    const cv::Mat& image = this->image(sample);
    if (image.type() != CV_8UC3) {
      return wrong_image_type(sample, image, name(), "an 8-bit 3-channel RGB image");
    }
    host_array out = host_array::uninitialized(dtype::float32, {3, image.rows, image.cols});
    const std::size_t plane = static_cast<std::size_t>(image.rows) * image.cols;
    float* r = out.data<float>();
    for (int y = 0; y < image.rows; ++y) {
      const std::size_t row = static_cast<std::size_t>(y) * image.cols;
      table_.interleaved_row(image.ptr<std::uint8_t>(y), image.cols, r + row, r + plane + row,
                             r + 2 * plane + row);
    }
    sample.fields[image_field()].set(std::move(out));
    return {};
  }

 private:
  normalize_table table_;
};

class to_uint8_step final : public image_step {
 public:
  using image_step::image_step;
  std::string_view name() const noexcept override { return to_uint8_spec::op; }

 protected:
  expected<void> apply_to_image(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    const cv::Mat& image = this->image(sample);
    if (image.depth() != CV_8U) {
      return wrong_image_type(sample, image, name(), "an 8-bit image");
    }
    std::vector<cv::Mat> planes;
    host_array out = planar_array(image, planes);
    cv::split(image, planes.data());
    sample.fields[image_field()].set(std::move(out));
    return {};
  }
};

// The image in `name` becomes a channels x height x width array of `type`.
expected<std::size_t> bind_planar(const std::string& name, dtype type, chain_fields& fields) {
  auto index = bind_image(name, fields);
  if (!index) {
    return index;
  }
  const auto& hwc = fields.type(*index).shape;
  fields.write(name, {field_kind::tensor, type, 3, {hwc[2], hwc[0], hwc[1], 0}});
  return index;
}

}  // namespace

expected<void> check_params(const normalize_spec& spec) {
  for (std::size_t c = 0; c < 3; ++c) {
    std::string index = "[" + std::to_string(c) + "]";
    if (!std::isfinite(spec.mean[c])) {
      return invalid_spec(normalize_spec::op, "mean" + index + " must be finite (got " +
                                                  format_number(spec.mean[c]) + ")");
    }
    if (!std::isfinite(spec.stddev[c]) || spec.stddev[c] == 0.0) {
      return invalid_spec(normalize_spec::op, "std" + index + " must be finite and non-zero (got " +
                                                  format_number(spec.stddev[c]) + ")");
    }
  }
  return {};
}

expected<step_ptr> make_step(const normalize_spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  auto index = bind_planar(spec.field, dtype::float32, fields);
  if (!index) {
    return std::move(index).error();
  }
  return step_ptr(std::make_unique<normalize_step>(spec, *index));
}

expected<void> check_params(const to_uint8_spec& /*spec*/) {
  return {};
}

expected<step_ptr> make_step(const to_uint8_spec& spec, chain_fields& fields) {
  auto index = bind_planar(spec.field, dtype::uint8, fields);
  if (!index) {
    return std::move(index).error();
  }
  return step_ptr(std::make_unique<to_uint8_step>(*index));
}

}  // namespace conveyor
