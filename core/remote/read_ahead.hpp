#pragma once
/// What a dataset in an object store fetches ahead of its readers (remote_store.hpp queues it):
///
/// - the window: every sample handed to the readers (sample_source::will_read), at once, so
///   that the window's samples are in flight together (coalesced where they lie close);
/// - the cache's blocks (CoorDL's lesson: remote reads happen once): with a cache in front, the
///   first sample of a block of s3.read_size bytes that a reader is handed brings the block's
///   every sample the cache will hold (one range GET of consecutive records, in the epoch's
///   order of first use). The readers then find them fetched, and fill the cache with them;
///   later epochs read them from the cache and make no request.
///
/// Samples the cache holds already are not fetched, and a sample the cache will hold is fetched
/// once: a later epoch's window that reaches it before the cache has taken it in (a window
/// that spans an epoch boundary) does not fetch it again. Thread-safe.

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "core/remote/remote_store.hpp"
#include "core/storage/minio_cache.hpp"
#include "core/storage/sample_source.hpp"

namespace conveyor {

class read_ahead {
 public:
  /// `dataset` gives the samples' extents and shards (its files are the store's objects, in the
  /// same order); it must outlive this.
  read_ahead(std::shared_ptr<remote_store> store, const sample_source& dataset);

  /// The cache in front of the dataset (call once, before will_read).
  void use_cache(std::shared_ptr<const minio_cache> cache);
  /// Samples `ids` of epoch `epoch` were handed to the readers.
  void will_read(std::uint64_t epoch, const std::vector<std::uint64_t>& ids);

 private:
  /// Sample `id`'s extents, added to `wants`.
  void want(std::uint64_t id, fetch_priority p, std::vector<range_want>& wants) const;
  /// The cache's samples in the block of s3.read_size bytes around sample `id`'s first extent,
  /// once per block.
  void fill_block(std::uint64_t id, std::uint64_t epoch, const storage_extent& at,
                  std::vector<range_want>& wants);
  bool wanted_for_cache(std::uint64_t id) const;
  /// False for a sample the cache will hold that an earlier epoch fetched; true otherwise (the
  /// first epoch to fetch it is noted).
  bool fetch_once(std::uint64_t id, std::uint64_t epoch);

  std::shared_ptr<remote_store> store_;
  const sample_source& dataset_;
  std::shared_ptr<const minio_cache> cache_;
  std::mutex mutex_;
  std::set<std::pair<std::uint64_t, std::uint64_t>> blocks_;  ///< (file, block) filled
  /// By sample id: 1 + the epoch that first fetched a sample the cache will hold; 0: none yet.
  std::vector<std::uint64_t> fetched_in_;
};

}  // namespace conveyor
