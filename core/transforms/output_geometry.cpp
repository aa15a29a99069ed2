#include "core/transforms/output_geometry.hpp"

#include <optional>
#include <type_traits>

namespace conveyor {
namespace {

// What one spec does to the size: fixes it (height x width), makes it vary with the image
// (nullopt inside a set optional), or leaves it alone (nullopt).
struct size_effect {
  bool changes = false;
  int height = 0;
  int width = 0;
};

size_effect effect_of(const transform_spec& spec) {
  return std::visit(
      [](const auto& s) -> size_effect {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, decode_spec>) {
          return {true, 0, 0};
        } else if constexpr (std::is_same_v<T, resize_spec>) {
          return s.size > 0 ? size_effect{true, 0, 0} : size_effect{true, s.height, s.width};
        } else if constexpr (std::is_same_v<T, random_resized_crop_spec> ||
                             std::is_same_v<T, center_crop_spec>) {
          return {true, s.height, s.width};
        } else {
          return {};
        }
      },
      spec);
}

}  // namespace

expected<sample_geometry> output_geometry(const std::vector<transform_spec>& specs) {
  sample_geometry out{3, 0, 0, dtype::float32};
  for (const auto& spec : specs) {
    if (auto effect = effect_of(spec); effect.changes) {
      out.height = effect.height;
      out.width = effect.width;
    }
    if (std::holds_alternative<to_uint8_spec>(spec)) {
      out.type = dtype::uint8;
    } else if (std::holds_alternative<normalize_spec>(spec)) {
      out.type = dtype::float32;
    }
  }
  if (out.height <= 0 || out.width <= 0) {
    return error{errc::invalid_config,
                 "the transforms do not end in one fixed size: add a random_resized_crop, "
                 "center_crop or resize to [height, width] after the last step that varies it"};
  }
  return out;
}

}  // namespace conveyor
