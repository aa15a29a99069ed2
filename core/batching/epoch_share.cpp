#include "core/batching/epoch_share.hpp"

#include <algorithm>

namespace conveyor {

std::uint64_t epoch_share::size(std::uint64_t n) const noexcept {
  if (!ids.empty()) {
    return static_cast<std::uint64_t>(std::count(ids.begin(), ids.end(), true));
  }
  return n > rank ? (n - rank + world - 1) / world : 0;
}

}  // namespace conveyor
