#include "core/metrics/read_counts.hpp"

namespace conveyor {

epoch_reads& epoch_reads::operator+=(const epoch_reads& o) noexcept {
  cache_hits += o.cache_hits;
  storage_reads += o.storage_reads;
  storage_bytes += o.storage_bytes;
  return *this;
}

epoch_reads& read_counts::at(std::uint64_t epoch) {
  if (epochs_.size() <= epoch) {
    epochs_.resize(epoch + 1);
  }
  return epochs_[epoch];
}

void read_counts::hit(std::uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++at(epoch).cache_hits;
}

void read_counts::stored(std::uint64_t epoch, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& e = at(epoch);
  ++e.storage_reads;
  e.storage_bytes += bytes;
}

std::vector<epoch_reads> read_counts::by_epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return epochs_;
}

epoch_reads read_counts::totals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  epoch_reads t;
  for (const auto& e : epochs_) {
    t += e;
  }
  return t;
}

}  // namespace conveyor
