#pragma once
/// CoorDL's MinIO cache: encoded sample bytes kept in memory, filled on a sample's first read
/// and never evicted. Every epoch reads the dataset in a new random order, so an LRU cache (the
/// page cache) evicts items before they come around again and a cache of half the dataset hits
/// far less than half; a cache whose contents are fixed hits exactly its share every epoch.
///
/// Which samples are cached is a plan made at start, a function of the seed alone: samples in
/// the order of a hash of (seed, id), as many as fit in the capacity by their stored size. So a
/// run (or another node) can tell what is cached without asking, and the cache holds the same
/// samples whatever order the first epoch reads them in.

#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "core/storage/record.hpp"
#include "core/storage/sample_source.hpp"

namespace conveyor {

/// Thread-safe: readers find and fill concurrently.
class minio_cache {
 public:
  /// The plan for `source` with `capacity` bytes, seeded `seed`.
  static std::shared_ptr<minio_cache> plan(const sample_source& source, std::uint64_t capacity,
                                           std::uint64_t seed);
  /// A cache of the samples marked in `members` (their stored bytes adding up to
  /// `planned_bytes`), holding at most `capacity` bytes of payload.
  minio_cache(std::vector<bool> members, std::uint64_t planned_bytes, std::uint64_t capacity);

  bool member(std::uint64_t id) const noexcept { return id < members_.size() && members_[id]; }
  /// A copy of sample `id` when it is cached.
  std::optional<record> find(std::uint64_t id) const;
  /// Sample `id` was read from storage: kept when it is a member not cached yet and fits.
  /// False when it was not kept.
  bool fill(std::uint64_t id, const record& r);

  std::uint64_t capacity() const noexcept { return capacity_; }
  std::uint64_t member_count() const noexcept { return member_count_; }
  std::uint64_t planned_bytes() const noexcept { return planned_bytes_; }
  std::uint64_t cached_samples() const;
  std::uint64_t cached_bytes() const;

 private:
  std::vector<bool> members_;
  std::uint64_t member_count_ = 0;
  std::uint64_t planned_bytes_ = 0;
  std::uint64_t capacity_ = 0;
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::uint64_t, record> entries_;
  std::uint64_t bytes_ = 0;  ///< payload bytes held
};

}  // namespace conveyor
