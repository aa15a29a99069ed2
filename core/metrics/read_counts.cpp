#include "core/metrics/read_counts.hpp"

namespace conveyor {

epoch_reads& epoch_reads::operator+=(const epoch_reads& o) noexcept {
  cache_hits += o.cache_hits;
  disk_hits += o.disk_hits;
  storage_reads += o.storage_reads;
  storage_bytes += o.storage_bytes;
  peer_fetches += o.peer_fetches;
  peer_bytes += o.peer_bytes;
  peer_fallbacks += o.peer_fallbacks;
  peer_served += o.peer_served;
  return *this;
}

epoch_reads* read_counts::at(std::uint64_t epoch) {
  if (epoch >= max_epochs_) {
    return nullptr;
  }
  if (epochs_.size() <= epoch) {
    epochs_.resize(epoch + 1);
  }
  return &epochs_[epoch];
}

void read_counts::hit(std::uint64_t epoch, bool from_disk) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto* e = at(epoch)) {
    e->cache_hits += 1;
    e->disk_hits += from_disk ? 1 : 0;
  }
}

void read_counts::stored(std::uint64_t epoch, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto* e = at(epoch)) {
    e->storage_reads += 1;
    e->storage_bytes += bytes;
  }
}

void read_counts::fetched(std::uint64_t epoch, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto* e = at(epoch)) {
    e->peer_fetches += 1;
    e->peer_bytes += bytes;
  }
}

void read_counts::fell_back(std::uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto* e = at(epoch)) {
    e->peer_fallbacks += 1;
  }
}

void read_counts::served(std::uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto* e = at(epoch)) {
    e->peer_served += 1;
  }
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
