#include "core/transforms/normalize_placement.hpp"

namespace conveyor {

normalize_placement move_normalize_to_feeder(std::vector<transform_spec> chain) {
  normalize_placement out;
  if (!chain.empty()) {
    if (const auto* last = std::get_if<normalize_spec>(&chain.back())) {
      out.in_feeder = *last;
      to_uint8_spec planar;
      planar.field = last->field;
      chain.back() = planar;
    }
  }
  out.cpu_chain = std::move(chain);
  return out;
}

}  // namespace conveyor
