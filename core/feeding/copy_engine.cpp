#include "core/feeding/copy_engine.hpp"

namespace conveyor {

expected<bool> drain(copy_engine& engine, copy_engine::clock::time_point deadline) {
  auto marker = engine.create_event();
  if (!marker) {
    return std::move(marker).error();
  }
  if (auto ok = engine.record(**marker); !ok) {
    return std::move(ok).error();
  }
  return engine.wait_until(**marker, deadline);
}

}  // namespace conveyor
