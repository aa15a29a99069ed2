#include "core/storage/cache_plan.hpp"

#include <xxhash.h>

#include <algorithm>
#include <utility>

#include "core/base/sample_seed.hpp"

namespace conveyor {
namespace {

// Sample ids 0..n-1 in the order of their hash under `seed`.
std::vector<std::uint64_t> hash_order(std::uint64_t n, std::uint64_t seed) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> keyed(n);
  for (std::uint64_t id = 0; id < n; ++id) {
    keyed[id] = {sample_seed(seed, id), id};
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::uint64_t> ids(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    ids[i] = keyed[i].second;
  }
  return ids;
}

// The node that sample `id`, the `position`-th of the hash order, is given to (an index into
// the nodes being planned: 0 alone under `whole`).
std::uint64_t assignee(const sample_source& source, const cache_plan::shape& where,
                       std::uint64_t position, std::uint64_t id) {
  switch (where.partition) {
    case cache_partition::by_shard:
      return source.shard_of(id).value_or(0) % where.world;
    case cache_partition::by_hash:
      return position % where.world;
    case cache_partition::whole:
      break;
  }
  return 0;
}

}  // namespace

cache_plan cache_plan::make(const sample_source& source, cache_capacity per_node,
                            std::uint64_t seed, shape where) {
  cache_plan p;
  p.where_ = where;
  const auto n = source.size();
  p.holder_.assign(n, nobody);
  p.on_disk_.assign(n, false);
  const bool whole = where.partition == cache_partition::whole;
  std::vector<cache_capacity> left(whole ? 1 : where.world, per_node);
  const auto order = hash_order(n, seed);
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto id = order[i];
    const auto node = assignee(source, where, i, id);
    const auto bytes = source.stored_bytes(id);
    auto& room = left[node];
    const bool disk = bytes > room.memory;
    auto& tier_left = disk ? room.disk : room.memory;
    if (bytes > tier_left) {
      continue;  // too large for what is left; a later, smaller sample may fit
    }
    tier_left -= bytes;
    p.holder_[id] = static_cast<std::int32_t>(whole ? where.rank : node);
    p.on_disk_[id] = disk;
    if (p.holder_[id] == static_cast<std::int32_t>(where.rank)) {
      (disk ? p.disk_samples_ : p.memory_samples_) += 1;
      (disk ? p.disk_bytes_ : p.memory_bytes_) += bytes;
    }
  }
  // Every node's holder and tier, and the cluster's shape: what two nodes must agree on.
  std::vector<std::int64_t> encoded(n + 2);
  for (std::uint64_t id = 0; id < n; ++id) {
    encoded[id] = std::int64_t{p.holder_[id]} * 2 + (p.on_disk_[id] ? 1 : 0);
  }
  encoded[n] = static_cast<std::int64_t>(where.world);
  encoded[n + 1] = static_cast<std::int64_t>(where.partition);
  p.digest_ = XXH3_64bits_withSeed(encoded.data(), encoded.size() * sizeof(std::int64_t), seed);
  return p;
}

std::optional<std::uint64_t> cache_plan::holder(std::uint64_t id) const noexcept {
  if (id >= holder_.size() || holder_[id] == nobody) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(holder_[id]);
}

cache_tier cache_plan::tier(std::uint64_t id) const noexcept {
  if (holder(id) != where_.rank) {
    return cache_tier::none;
  }
  return on_disk_[id] ? cache_tier::disk : cache_tier::memory;
}

std::uint64_t cache_plan::samples(cache_tier t) const noexcept {
  return t == cache_tier::memory ? memory_samples_ : t == cache_tier::disk ? disk_samples_ : 0;
}

std::uint64_t cache_plan::bytes(cache_tier t) const noexcept {
  return t == cache_tier::memory ? memory_bytes_ : t == cache_tier::disk ? disk_bytes_ : 0;
}

}  // namespace conveyor
