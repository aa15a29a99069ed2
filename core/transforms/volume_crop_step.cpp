// The rand_balanced_crop step: the MLPerf UNet3D reference's RandBalancedCrop over volumes read
// in place (volume_part.hpp), its foreground drawn from each case's index (foreground_index.hpp),
// built on the case's first read and kept for the run.

#include "core/transforms/balanced_crop.hpp"
#include "core/transforms/foreground_index.hpp"
#include "core/transforms/sample_parts.hpp"
#include "core/transforms/spec_checks.hpp"
#include "core/transforms/transform_step.hpp"
#include "core/transforms/volume_part.hpp"

namespace conveyor {
namespace {

std::string shape_text(const volume_part& v) {
  return "[" + std::to_string(v.channels()) + ", " + std::to_string(v.extents()[0]) + ", " +
         std::to_string(v.extents()[1]) + ", " + std::to_string(v.extents()[2]) + "]";
}

class rand_balanced_crop_step final : public transform_step {
 public:
  rand_balanced_crop_step(const rand_balanced_crop_spec& spec, std::size_t image, std::size_t label)
      : spec_(spec), image_(image), label_(label) {}

  std::string_view name() const noexcept override { return rand_balanced_crop_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& rng) const override {
    auto image = open(sample, spec_.image_part, dtype::float32);
    if (!image) {
      return std::move(image).error();
    }
    auto label = open(sample, spec_.label_part, dtype::uint8);
    if (!label) {
      return std::move(label).error();
    }
    if (image->channels() != 1) {
      return refuse(sample, "image '" + image->name + "' is " + shape_text(*image) +
                                ": the recipe reads volumes of one channel");
    }
    if (image->extents() != label->extents()) {
      return refuse(sample, "image '" + image->name + "' is " + shape_text(*image) + ", label '" +
                                label->name + "' is " + shape_text(*label) + ": the shapes differ");
    }
    auto index = index_of(sample, *image, *label);
    if (!*index) {
      return refuse(sample, index->error().message());
    }
    rng_draws own(rng);
    auto window = balanced_crop_window(image->extents(), **index, {spec_.size, spec_.oversampling},
                                       draws_for(sample, own));
    if (!window) {
      return refuse(sample, window.error().message());
    }
    auto image_out = crop(*image, *window, dtype::float32);
    auto label_out = image_out ? crop(*label, *window, dtype::uint8) : image_out;
    if (!label_out) {
      return refuse(sample, label_out.error().message());
    }
    sample.fields[image_].set(std::move(*image_out));
    sample.fields[label_].set(std::move(*label_out));
    return {};
  }

 private:
  error refuse(const sample_state& sample, const std::string& why) const {
    return sample_error(errc::decode_error, sample, name(), why);
  }

  expected<volume_part> open(const sample_state& sample, const std::string& part,
                             dtype type) const {
    auto opened = open_sample_part(sample, part);
    if (!opened) {
      return refuse(sample, opened.error().message());
    }
    auto volume = open_volume_part(opened->name, std::move(opened->bytes), type);
    if (!volume) {
      return refuse(sample, volume.error().message());
    }
    return volume;
  }

  // The case's index, made on its first read: the label's objects, the image checked finite.
  case_index_memo::entry index_of(const sample_state& sample, const volume_part& image,
                                  const volume_part& label) const {
    if (auto kept = memo_.find(sample.sample_id, sample.key)) {
      return kept;
    }
    auto made = build_case_index(label, spec_.max_class);
    if (made) {
      if (auto finite = check_finite(image); !finite) {
        made = std::move(finite).error();
      }
    }
    return memo_.keep(sample.sample_id, sample.key, std::move(made));
  }

  expected<host_array> crop(const volume_part& volume, const volume_box& box, dtype type) const {
    auto out = host_array::uninitialized(
        type, {volume.channels(), box[0].extent(), box[1].extent(), box[2].extent()});
    if (auto ok = read_box(volume, box, out.bytes.data()); !ok) {
      return std::move(ok).error();
    }
    return out;
  }

  rand_balanced_crop_spec spec_;
  std::size_t image_;
  std::size_t label_;
  mutable case_index_memo memo_;  ///< shared by every copy of the chain (steps are shared)
};

}  // namespace

expected<void> check_params(const rand_balanced_crop_spec& spec) {
  const auto op = rand_balanced_crop_spec::op;
  if (spec.fields.size() != 2) {
    return invalid_spec(op, "fields must name two fields, the image and the label (got " +
                                std::to_string(spec.fields.size()) + ")");
  }
  if (spec.image_part.empty() || spec.label_part.empty()) {
    return invalid_spec(op, "image and label must name the parts to read (\"x.npy\", \"y.npy\")");
  }
  for (auto side : spec.size) {
    if (side < 1 || side > 4096) {
      return invalid_spec(op,
                          "size must be 1..4096 on each axis (got " + std::to_string(side) + ")");
    }
  }
  if (!(spec.oversampling >= 0.0 && spec.oversampling <= 1.0)) {
    return invalid_spec(
        op, "oversampling must be in [0, 1] (got " + format_number(spec.oversampling) + ")");
  }
  if (spec.max_class < 1 || spec.max_class > 255) {
    return invalid_spec(op,
                        "max_class must be 1..255 (got " + std::to_string(spec.max_class) + ")");
  }
  return {};
}

expected<step_ptr> make_step(const rand_balanced_crop_spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  const auto [x, y, z] = spec.size;
  auto image = fields.write(spec.fields[0], {field_kind::tensor, dtype::float32, 4, {1, x, y, z}});
  auto label = fields.write(spec.fields[1], {field_kind::tensor, dtype::uint8, 4, {1, x, y, z}});
  return step_ptr(std::make_unique<rand_balanced_crop_step>(spec, image, label));
}

}  // namespace conveyor
