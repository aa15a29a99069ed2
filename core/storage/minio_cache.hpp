#pragma once
/// CoorDL's MinIO cache: encoded sample bytes kept in memory (and, past it, on a local disk),
/// filled on a sample's first read and never evicted. Every epoch reads the dataset in a new
/// random order, so an LRU cache (the page cache) evicts items before they come around again
/// and a cache of half the dataset hits far less than half; a cache whose contents are fixed
/// hits exactly its share every epoch.
///
/// Which samples are cached is a plan made at start, a function of the seed alone
/// (core/storage/cache_plan.hpp): so a run (or another node) can tell what is cached without
/// asking, and the cache holds the same samples whatever order the first epoch reads them in.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "core/storage/cache_plan.hpp"
#include "core/storage/disk_tier.hpp"
#include "core/storage/fill_claims.hpp"
#include "core/storage/record.hpp"
#include "core/storage/sample_source.hpp"

namespace conveyor {

/// What minio_cache::read_through gave: the record (or why there is none), and whether this
/// call read it from storage (else it came from the cache).
struct cache_read {
  expected<record> got;
  bool from_storage = false;
};

/// Thread-safe: readers find and fill concurrently.
class minio_cache {
 public:
  /// A node alone: `capacity` bytes of memory over the whole of `source`, seeded `seed`.
  static std::shared_ptr<minio_cache> plan(const sample_source& source, std::uint64_t capacity,
                                           std::uint64_t seed);
  /// This node's samples of `layout`: those of its memory tier in memory, holding at most
  /// `capacity.memory` bytes of payload; those of its disk tier in `disk` (null when the plan
  /// puts none on disk).
  minio_cache(std::shared_ptr<const cache_plan> layout, cache_capacity capacity,
              std::unique_ptr<disk_tier> disk);

  const cache_plan& layout() const noexcept { return *layout_; }
  const std::shared_ptr<const cache_plan>& layout_ptr() const noexcept { return layout_; }
  /// Sample `id` is one this node caches.
  bool member(std::uint64_t id) const noexcept { return layout_->tier(id) != cache_tier::none; }
  /// Sample `id` is cached now (in either tier): a find would give it, without reading it.
  bool holds(std::uint64_t id) const;
  /// A copy of sample `id` when it is cached (in memory, or read back from the disk tier).
  std::optional<record> find(std::uint64_t id) const;
  /// Sample `id` was read from storage: kept when it is a member not cached yet and fits.
  /// False when it was not kept (also when the disk tier failed to write it).
  bool fill(std::uint64_t id, const record& r);
  /// Sample `id` from the cache, else from `read` (storage), filled when it is a member. A
  /// member not cached yet is read from storage once whichever threads ask for it at once (a
  /// node's readers, its peer server's workers): one reads and fills, the others wait for that
  /// (each at most `wait`: past it, it reads for itself) and take the sample from the cache.
  /// A read that fails, or a sample that does not fit, leaves the next caller to read it.
  cache_read read_through(std::uint64_t id, const std::function<expected<record>()>& read,
                          std::chrono::milliseconds wait);
  /// How many read_through calls wait now for another's read (a test tells from it that one
  /// waits).
  std::size_t waiting_readers() const { return reading_.waiting(); }

  std::uint64_t capacity() const noexcept { return capacity_.memory + capacity_.disk; }
  std::uint64_t member_count() const noexcept;
  std::uint64_t planned_bytes() const noexcept;
  std::uint64_t cached_samples() const;
  /// Encoded bytes cached, both tiers.
  std::uint64_t cached_bytes() const;
  /// Of those, on the disk tier.
  std::uint64_t disk_bytes() const;

 private:
  /// A sample on the disk tier: where its payload lies, and the rest of its record.
  struct disk_entry {
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
    std::string key;
    std::int32_t label = 0;
    bool multipart = false;
    std::vector<std::uint32_t> in_place{};
    bool written = false;  ///< false while one reader writes it (others see a miss)
  };

  bool fill_memory(std::uint64_t id, const record& r);
  bool fill_disk(std::uint64_t id, const record& r);

  std::shared_ptr<const cache_plan> layout_;
  cache_capacity capacity_;
  std::unique_ptr<disk_tier> disk_;
  fill_claims reading_;  ///< the members being read from storage now
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::uint64_t, record> entries_;
  std::unordered_map<std::uint64_t, disk_entry> on_disk_;
  std::uint64_t bytes_ = 0;       ///< payload bytes held in memory
  std::uint64_t disk_bytes_ = 0;  ///< payload bytes written to the disk tier
  bool disk_failed_ = false;      ///< a write to the disk tier failed (logged once)
};

}  // namespace conveyor
