#include "core/storage/minio_cache.hpp"

#include <algorithm>
#include <mutex>
#include <numeric>

#include "core/base/sample_seed.hpp"

namespace conveyor {

std::shared_ptr<minio_cache> minio_cache::plan(const sample_source& source, std::uint64_t capacity,
                                               std::uint64_t seed) {
  const auto n = source.size();
  std::vector<std::uint64_t> ids(n);
  std::iota(ids.begin(), ids.end(), std::uint64_t{0});
  const auto rank = [seed](std::uint64_t id) { return sample_seed(seed, id); };
  std::sort(ids.begin(), ids.end(),
            [&](std::uint64_t a, std::uint64_t b) { return rank(a) < rank(b); });
  std::vector<bool> members(n, false);
  std::uint64_t planned = 0;
  for (auto id : ids) {
    auto bytes = source.stored_bytes(id);
    if (planned + bytes <= capacity) {  // a sample too large for what is left: the next may fit
      planned += bytes;
      members[id] = true;
    }
  }
  return std::make_shared<minio_cache>(std::move(members), planned, capacity);
}

minio_cache::minio_cache(std::vector<bool> members, std::uint64_t planned_bytes,
                         std::uint64_t capacity)
    : members_(std::move(members)),
      member_count_(static_cast<std::uint64_t>(std::count(members_.begin(), members_.end(), true))),
      planned_bytes_(planned_bytes),
      capacity_(capacity) {}

std::optional<record> minio_cache::find(std::uint64_t id) const {
  if (!member(id)) {
    return std::nullopt;
  }
  std::shared_lock<std::shared_mutex> lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return std::nullopt;
  }
  return it->second;
}

bool minio_cache::fill(std::uint64_t id, const record& r) {
  if (!member(id)) {
    return false;
  }
  std::unique_lock<std::shared_mutex> lock(mutex_);
  if (entries_.count(id) != 0 || bytes_ + r.payload.size() > capacity_) {
    return false;
  }
  bytes_ += r.payload.size();
  entries_.emplace(id, r);
  return true;
}

std::uint64_t minio_cache::cached_samples() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return entries_.size();
}

std::uint64_t minio_cache::cached_bytes() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return bytes_;
}

}  // namespace conveyor
