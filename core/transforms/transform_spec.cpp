#include "core/transforms/transform_spec.hpp"

#include <string>
#include <utility>

namespace conveyor {

std::string_view to_string(decode_device where) noexcept {
  switch (where) {
    case decode_device::gpu:
      return "gpu";
    case decode_device::automatic:
      return "auto";
    case decode_device::cpu:
      break;
  }
  return "cpu";
}
namespace {

/// "decode, random_resized_crop, ..." for error messages.
template <std::size_t... I>
std::string known_ops(std::index_sequence<I...> /*ops*/) {
  std::string out;
  auto add = [&out](std::string_view op) {
    if (!op.empty()) {
      out += (out.empty() ? "" : ", ") + std::string(op);
    }
  };
  (add(std::variant_alternative_t<I, transform_spec>::op), ...);
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
    if (!spec::op.empty() && op == spec::op) {
      return transform_spec{spec{}};
    }
    return default_spec_from<I + 1>(op);
  }
}

}  // namespace

std::string_view op_name(const transform_spec& spec) {
  if (const auto* user = std::get_if<user_step_spec>(&spec)) {
    return user->name;
  }
  if (const auto* built = std::get_if<built_step_spec>(&spec)) {
    return built->name;
  }
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
