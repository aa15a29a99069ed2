#include "core/batching/bucketing.hpp"

#include <algorithm>

namespace conveyor {

std::int64_t bucketing::length_of(const prepared_sample& sample) const noexcept {
  if (!enabled() || field >= sample.fields.size()) {
    return 0;
  }
  const auto& a = sample.fields[field];
  return axis < a.rank ? a.extent(axis) : 0;
}

std::size_t bucket_of_length(std::int64_t length,
                             const std::vector<std::int64_t>& boundaries) noexcept {
  return static_cast<std::size_t>(std::upper_bound(boundaries.begin(), boundaries.end(), length) -
                                  boundaries.begin());
}

}  // namespace conveyor
