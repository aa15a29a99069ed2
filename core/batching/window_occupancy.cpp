#include "core/batching/window_occupancy.hpp"

namespace conveyor {

void window_occupancy::update(std::uint64_t in_flight, std::uint64_t now_ns) noexcept {
  const bool full = in_flight >= window_;
  if (full && full_since_ == 0) {
    full_since_ = now_ns == 0 ? 1 : now_ns;
  } else if (!full && full_since_ != 0) {
    full_ns_ += now_ns > full_since_ ? now_ns - full_since_ : 0;
    full_since_ = 0;
  }
}

void window_occupancy::resize(std::uint64_t window, std::uint64_t in_flight,
                              std::uint64_t now_ns) noexcept {
  window_ = window;
  update(in_flight, now_ns);
}

}  // namespace conveyor
