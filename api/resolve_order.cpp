#include "api/resolve_order.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/base/log.hpp"

namespace conveyor {
namespace {

struct stored_layout {
  std::uint64_t bytes = 0;          ///< every sample's stored bytes
  std::uint64_t largest_shard = 0;  ///< the bytes of the largest shard (the set's without any)
  std::uint64_t largest_shard_id = 0;
};

stored_layout layout_of(const sample_source& dataset) {
  stored_layout out;
  std::map<std::uint64_t, std::uint64_t> shards;
  for (std::uint64_t id = 0; id < dataset.size(); ++id) {
    const auto bytes = dataset.stored_bytes(id);
    out.bytes += bytes;
    shards[dataset.shard_of(id).value_or(0)] += bytes;
  }
  for (const auto& [shard, bytes] : shards) {
    if (bytes > out.largest_shard) {
      out.largest_shard = bytes;
      out.largest_shard_id = shard;
    }
  }
  return out;
}

}  // namespace

expected<sample_order> resolve_order(const topology& t, const sample_source& dataset) {
  const auto& d = t.dataset;
  if (d.shuffle != shuffle_mode::blocks) {
    return sample_order{d.shuffle, 0, 0};
  }
  const auto layout = layout_of(dataset);
  if (dataset.size() > 0 && d.shuffle_block > layout.largest_shard) {
    return error{errc::invalid_config,
                 t.source + ": dataset.shuffle_block (" + std::to_string(d.shuffle_block) +
                     " bytes) is larger than the dataset's largest shard (" +
                     std::to_string(layout.largest_shard) + " bytes, shard " +
                     std::to_string(layout.largest_shard_id) + " of " + d.path +
                     "): a block is consecutive records of one shard"};
  }
  const auto per_sample =
      dataset.size() == 0
          ? 1.0
          : std::max(1.0, static_cast<double>(layout.bytes) / static_cast<double>(dataset.size()));
  const auto block = std::max<std::uint64_t>(
      1,
      static_cast<std::uint64_t>(std::llround(static_cast<double>(d.shuffle_block) / per_sample)));
  auto order = sample_order::in_blocks(block, d.shuffle_span);
  log("node")->info("dataset.shuffle = \"blocks\": {} ({:.1f} MB a block, {:.1f} MB a span)",
                    describe(order), static_cast<double>(block) * per_sample / 1e6,
                    static_cast<double>(block * d.shuffle_span) * per_sample / 1e6);
  return order;
}

}  // namespace conveyor
