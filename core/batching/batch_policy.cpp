#include "core/batching/batch_policy.hpp"

namespace conveyor {

std::string_view to_string(batching_policy kind) noexcept {
  return kind == batching_policy::latency_aware ? "latency_aware" : "in_order";
}

std::unique_ptr<batch_policy> make_batch_policy(batching_policy kind, batch_shape shape) {
  return kind == batching_policy::latency_aware ? make_latency_aware_policy(shape)
                                                : make_in_order_policy(shape);
}

}  // namespace conveyor
