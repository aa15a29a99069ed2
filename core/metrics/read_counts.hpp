#pragma once
/// Where each epoch's samples came from: the cache (core/storage/minio_cache.hpp, memory or
/// disk tier), a peer's cache over the network (the partitioned cache), or storage (how many
/// reads, how many bytes); and what this node served to its peers. The readers and the peer
/// server count; the node's JSON line and the monitor read it.

#include <cstdint>
#include <mutex>
#include <vector>

namespace conveyor {

struct epoch_reads {
  std::uint64_t cache_hits = 0;     ///< both tiers
  std::uint64_t disk_hits = 0;      ///< of cache_hits, from the disk tier
  std::uint64_t storage_reads = 0;  ///< for this node's own samples and for its peers'
  std::uint64_t storage_bytes = 0;
  std::uint64_t peer_fetches = 0;  ///< samples fetched from a peer's cache
  std::uint64_t peer_bytes = 0;
  std::uint64_t peer_fallbacks = 0;  ///< samples a peer holds, read from storage instead
  std::uint64_t peer_served = 0;     ///< samples this node gave its peers

  epoch_reads& operator+=(const epoch_reads& o) noexcept;
};

/// Thread-safe. Epochs are counted from 0; an epoch past `max_epochs` (from a peer's
/// request) is not counted.
class read_counts {
 public:
  /// The run's epochs: counts of later ones are dropped.
  explicit read_counts(std::uint64_t max_epochs = 1U << 20U) : max_epochs_(max_epochs) {}

  /// A sample of `epoch` came from the cache (its disk tier when `from_disk`).
  void hit(std::uint64_t epoch, bool from_disk = false);
  /// A sample of `epoch` was read from storage: `bytes` bytes.
  void stored(std::uint64_t epoch, std::uint64_t bytes);
  /// A sample of `epoch` came from a peer's cache: `bytes` bytes.
  void fetched(std::uint64_t epoch, std::uint64_t bytes);
  /// A sample of `epoch` that a peer holds was read from storage (the peer was down, slow or
  /// refused).
  void fell_back(std::uint64_t epoch);
  /// A sample was given to a peer, for its epoch `epoch`.
  void served(std::uint64_t epoch);
  /// Per epoch, from epoch 0 to the last one counted.
  std::vector<epoch_reads> by_epoch() const;
  epoch_reads totals() const;

 private:
  // The counts of `epoch` (nullptr past max_epochs_). Called with mutex_ held.
  epoch_reads* at(std::uint64_t epoch);

  std::uint64_t max_epochs_;
  mutable std::mutex mutex_;
  std::vector<epoch_reads> epochs_;
};

}  // namespace conveyor
