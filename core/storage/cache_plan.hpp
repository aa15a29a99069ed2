#pragma once
/// Which node's cache holds which sample (CoorDL's MinIO cache, and its partitioned cache over
/// several nodes): a plan made at start from the seed, the dataset's stored sizes and the
/// cluster's shape alone, so that every node computes every node's contents without asking.
///
/// Samples are taken in the order of a hash of (seed, id). Each is given to a node by the
/// partition (below); every node then keeps the samples it was given, in that order, as long as
/// they fit: first in its memory tier, then in its disk tier. A sample too large for what is
/// left is skipped and the next one may fit.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/storage/sample_source.hpp"

namespace conveyor {

/// How the samples are spread over the caches of a cluster's nodes.
enum class cache_partition : std::uint8_t {
  /// Every node plans over every sample for itself: a node alone, or nodes that do not serve
  /// each other (each reads a new random share of every epoch).
  whole,
  /// Node s mod world holds the samples of record shard s: exactly what it reads itself when
  /// the cluster splits by shard.
  by_shard,
  /// The i-th sample of the hash order goes to node i mod world: the partitioned cache, whose
  /// nodes fetch each other's samples over the network.
  by_hash,
};

/// What one node may keep: bytes of encoded samples in memory and on its local disk.
struct cache_capacity {
  std::uint64_t memory = 0;
  std::uint64_t disk = 0;
};

/// Where a node keeps a sample of its plan.
enum class cache_tier : std::uint8_t { none, memory, disk };

/// Immutable after make(): every method may be called concurrently.
class cache_plan {
 public:
  /// This node's place in the cluster, and how the cluster spreads the samples.
  struct shape {
    std::uint64_t rank = 0;
    std::uint64_t world = 1;
    cache_partition partition = cache_partition::whole;
  };

  /// The plan for `source`, each node holding up to `per_node` bytes, seeded `seed`.
  /// Precondition: rank < world; by_shard only for a source in record shards.
  static cache_plan make(const sample_source& source, cache_capacity per_node, std::uint64_t seed,
                         shape where);

  /// The node whose cache holds sample `id` (this node's own rank included); nullopt when no
  /// node's does. Under `whole`, only this node is known: another node is never named.
  std::optional<std::uint64_t> holder(std::uint64_t id) const noexcept;
  /// Where this node keeps sample `id` (none when it does not hold it).
  cache_tier tier(std::uint64_t id) const noexcept;

  std::uint64_t rank() const noexcept { return where_.rank; }
  std::uint64_t world() const noexcept { return where_.world; }
  cache_partition partition() const noexcept { return where_.partition; }
  std::uint64_t size() const noexcept { return holder_.size(); }
  /// This node's samples and their stored bytes, per tier.
  std::uint64_t samples(cache_tier t) const noexcept;
  std::uint64_t bytes(cache_tier t) const noexcept;
  /// A hash of the whole plan (every node's samples and tiers, the cluster's shape): two nodes
  /// with the same digest agree on who holds what.
  std::uint64_t digest() const noexcept { return digest_; }

 private:
  static constexpr std::int32_t nobody = -1;

  shape where_;
  std::vector<std::int32_t> holder_;  ///< per sample: the node holding it, or nobody
  std::vector<bool> on_disk_;         ///< per sample: its holder keeps it in the disk tier
  std::uint64_t memory_samples_ = 0;
  std::uint64_t disk_samples_ = 0;
  std::uint64_t memory_bytes_ = 0;
  std::uint64_t disk_bytes_ = 0;
  std::uint64_t digest_ = 0;
};

}  // namespace conveyor
