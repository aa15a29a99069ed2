#include "core/metrics/latency_histogram.hpp"

#include <algorithm>

namespace conveyor {

void latency_histogram::record(std::int64_t ns) noexcept {
  const auto at = std::lower_bound(bounds_ns.begin(), bounds_ns.end(), ns) - bounds_ns.begin();
  ++counts_[static_cast<std::size_t>(at)];
  sum_ns_ += std::max<std::int64_t>(ns, 0);
}

}  // namespace conveyor
