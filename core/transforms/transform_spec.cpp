#include "core/transforms/transform_spec.hpp"

#include <string>
#include <utility>

namespace conveyor {
namespace {

/// "decode, random_resized_crop, ..." for error messages.
template <std::size_t... I>
std::string known_ops(std::index_sequence<I...> /*ops*/) {
  std::string out;
  ((out += (I == 0 ? "" : ", "), out += std::variant_alternative_t<I, transform_spec>::op), ...);
  return out;
}

template <std::size_t I = 0>
expected<transform_spec> default_spec_from(std::string_view op) {
  if constexpr (I == std::variant_size_v<transform_spec>) {
    return error(errc::invalid_argument,
                 "unknown transform op '" + std::string(op) + "' (known: " +
                     known_ops(std::make_index_sequence<std::variant_size_v<transform_spec>>{}) +
                     ")");
  } else {
    using spec = std::variant_alternative_t<I, transform_spec>;
    if (op == spec::op) {
      return transform_spec{spec{}};
    }
    return default_spec_from<I + 1>(op);
  }
}

}  // namespace

std::string_view op_name(const transform_spec& spec) {
  return std::visit([](const auto& s) { return s.op; }, spec);
}

expected<transform_spec> default_spec(std::string_view op) {
  return default_spec_from(op);
}

std::vector<transform_spec> imagenet_train_recipe() {
  random_resized_crop_spec crop;
  crop.height = 224;
  crop.width = 224;
  flip_spec flip;
  flip.p = 0.5;
  return {decode_spec{}, crop, flip, normalize_spec{}};
}

}  // namespace conveyor
