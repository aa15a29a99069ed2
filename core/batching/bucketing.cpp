#include "core/batching/bucketing.hpp"

#include <algorithm>

namespace conveyor {

std::size_t bucketing::bucket_of(const prepared_sample& sample) const noexcept {
  if (!enabled() || field >= sample.fields.size()) {
    return 0;
  }
  const auto& a = sample.fields[field];
  const auto length = axis < a.rank ? a.extent(axis) : 0;
  return static_cast<std::size_t>(std::upper_bound(boundaries.begin(), boundaries.end(), length) -
                                  boundaries.begin());
}

}  // namespace conveyor
