#pragma once
/// A node's share of every epoch when several nodes train one job ([cluster]): the global
/// epoch order is a function of the seed (epoch_order.hpp), and node `rank` of `world` prepares
/// the positions of it that are its own, so that every sample is delivered exactly once per
/// epoch across the cluster.
///
/// By sample (the default): positions p with p mod world == rank, an even split of each
/// epoch's random order. By shard: the samples of the record shards s with s mod world == rank
/// (`ids` marks them), so that each node reads only its own shard files.

#include <cstdint>
#include <vector>

namespace conveyor {

struct epoch_share {
  std::uint64_t rank = 0;
  std::uint64_t world = 1;
  std::vector<bool> ids;  ///< by shard: this node's samples; empty: by sample

  /// Whether position `position` of an epoch's order, holding sample `id`, is this node's.
  bool contains(std::uint64_t position, std::uint64_t id) const noexcept {
    return ids.empty() ? position % world == rank : id < ids.size() && ids[id];
  }
  /// How many of an epoch's `n` positions are this node's (the same every epoch).
  std::uint64_t size(std::uint64_t n) const noexcept;
};

}  // namespace conveyor
