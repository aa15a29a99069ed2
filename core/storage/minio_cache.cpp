#include "core/storage/minio_cache.hpp"

#include <mutex>

#include "core/base/log.hpp"

namespace conveyor {

std::shared_ptr<minio_cache> minio_cache::plan(const sample_source& source, std::uint64_t capacity,
                                               std::uint64_t seed) {
  cache_capacity memory_only{capacity, 0};
  auto layout = std::make_shared<const cache_plan>(cache_plan::make(source, memory_only, seed, {}));
  return std::make_shared<minio_cache>(std::move(layout), memory_only, nullptr);
}

minio_cache::minio_cache(std::shared_ptr<const cache_plan> layout, cache_capacity capacity,
                         std::unique_ptr<disk_tier> disk)
    : layout_(std::move(layout)), capacity_(capacity), disk_(std::move(disk)) {}

std::uint64_t minio_cache::member_count() const noexcept {
  return layout_->samples(cache_tier::memory) + layout_->samples(cache_tier::disk);
}

std::uint64_t minio_cache::planned_bytes() const noexcept {
  return layout_->bytes(cache_tier::memory) + layout_->bytes(cache_tier::disk);
}

bool minio_cache::holds(std::uint64_t id) const {
  const auto tier = layout_->tier(id);
  if (tier == cache_tier::none) {
    return false;
  }
  std::shared_lock<std::shared_mutex> lock(mutex_);
  if (tier == cache_tier::memory) {
    return entries_.count(id) != 0;
  }
  auto it = on_disk_.find(id);
  return it != on_disk_.end() && it->second.written;
}

std::optional<record> minio_cache::find(std::uint64_t id) const {
  const auto tier = layout_->tier(id);
  if (tier == cache_tier::none) {
    return std::nullopt;
  }
  std::shared_lock<std::shared_mutex> lock(mutex_);
  if (tier == cache_tier::memory) {
    auto it = entries_.find(id);
    return it == entries_.end() ? std::nullopt : std::optional<record>(it->second);
  }
  auto it = on_disk_.find(id);
  if (it == on_disk_.end() || !it->second.written) {
    return std::nullopt;
  }
  const auto entry = it->second;
  lock.unlock();
  auto payload = disk_->read(entry.offset, entry.size);
  if (!payload) {
    return std::nullopt;  // read from storage instead: nothing is lost
  }
  return record{entry.key, entry.label, std::move(*payload), entry.multipart, entry.in_place};
}

bool minio_cache::fill(std::uint64_t id, const record& r) {
  switch (layout_->tier(id)) {
    case cache_tier::memory:
      return fill_memory(id, r);
    case cache_tier::disk:
      return disk_ && fill_disk(id, r);
    case cache_tier::none:
      break;
  }
  return false;
}

cache_read minio_cache::read_through(std::uint64_t id,
                                     const std::function<expected<record>()>& read,
                                     std::chrono::milliseconds wait) {
  if (auto hit = find(id)) {
    return {std::move(*hit), false};
  }
  fill_claims::claim claim;
  if (member(id)) {
    claim = reading_.take(id, fill_claims::clock::now() + wait);
    if (auto hit = find(id)) {  // the read this one waited for filled it
      return {std::move(*hit), false};
    }
  }
  cache_read out{read(), true};
  if (out.got) {
    fill(id, *out.got);
  }
  return out;  // the claim is released once the sample is cached
}

bool minio_cache::fill_memory(std::uint64_t id, const record& r) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  if (entries_.count(id) != 0 || bytes_ + r.payload.size() > capacity_.memory) {
    return false;
  }
  bytes_ += r.payload.size();
  entries_.emplace(id, r);
  return true;
}

// Claims the entry, writes outside the lock (meanwhile find() misses it; read_through callers
// wait on the reader's fill claim), then
// marks it written; a failed write gives the entry up, its reserved space lost (logged once).
bool minio_cache::fill_disk(std::uint64_t id, const record& r) {
  std::optional<std::uint64_t> offset;
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    if (on_disk_.count(id) != 0 || !(offset = disk_->reserve(r.payload.size()))) {
      return false;
    }
    on_disk_.emplace(
        id, disk_entry{*offset, r.payload.size(), r.key, r.label, r.multipart, r.in_place, false});
  }
  auto written = disk_->write(*offset, r.payload);
  std::unique_lock<std::shared_mutex> lock(mutex_);
  if (!written) {
    on_disk_.erase(id);
    if (!disk_failed_) {
      disk_failed_ = true;
      log("cache")->warn("{} (such samples are read from storage)", written.error().what());
    }
    return false;
  }
  on_disk_[id].written = true;
  disk_bytes_ += r.payload.size();
  return true;
}

std::uint64_t minio_cache::cached_samples() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  std::uint64_t written = 0;
  for (const auto& [id, entry] : on_disk_) {
    written += entry.written ? 1 : 0;
  }
  return entries_.size() + written;
}

std::uint64_t minio_cache::cached_bytes() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return bytes_ + disk_bytes_;
}

std::uint64_t minio_cache::disk_bytes() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return disk_bytes_;
}

}  // namespace conveyor
