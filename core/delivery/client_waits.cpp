#include "core/delivery/client_waits.hpp"

namespace conveyor {

client_waits::client_waits(int jobs, int ranks)
    : ranks_(ranks), waited_ns_(static_cast<std::size_t>(jobs) * static_cast<std::size_t>(ranks)) {}

void client_waits::add(int job, int rank, std::int64_t ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  waited_ns_.at(static_cast<std::size_t>(job) * static_cast<std::size_t>(ranks_) +
                static_cast<std::size_t>(rank)) += ns;
}

std::vector<client_waits::entry> client_waits::snapshot() const {
  std::vector<entry> out;
  std::lock_guard<std::mutex> lock(mutex_);
  out.reserve(waited_ns_.size());
  for (std::size_t i = 0; i < waited_ns_.size(); ++i) {
    out.push_back({static_cast<int>(i / static_cast<std::size_t>(ranks_)),
                   static_cast<int>(i % static_cast<std::size_t>(ranks_)),
                   static_cast<double>(waited_ns_[i]) / 1e9});
  }
  return out;
}

}  // namespace conveyor
