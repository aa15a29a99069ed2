#pragma once
/// Where each epoch's samples came from: the cache (core/storage/minio_cache.hpp), or storage
/// (how many reads, how many bytes). The readers count; the node's JSON line and the monitor
/// read it.

#include <cstdint>
#include <mutex>
#include <vector>

namespace conveyor {

struct epoch_reads {
  std::uint64_t cache_hits = 0;
  std::uint64_t storage_reads = 0;
  std::uint64_t storage_bytes = 0;

  epoch_reads& operator+=(const epoch_reads& o) noexcept;
};

/// Thread-safe.
class read_counts {
 public:
  /// A sample of `epoch` came from the cache.
  void hit(std::uint64_t epoch);
  /// A sample of `epoch` was read from storage: `bytes` bytes.
  void stored(std::uint64_t epoch, std::uint64_t bytes);
  /// Per epoch, from epoch 0 to the last one counted.
  std::vector<epoch_reads> by_epoch() const;
  epoch_reads totals() const;

 private:
  epoch_reads& at(std::uint64_t epoch);

  mutable std::mutex mutex_;
  std::vector<epoch_reads> epochs_;
};

}  // namespace conveyor
