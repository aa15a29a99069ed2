// Which node's cache holds which sample (core/storage/cache_plan.hpp), as plain code over real
// datasets: every node computes the same plan from the seed alone; a partitioned plan gives each
// sample to at most one node, each within its capacity, memory before disk; a plan by shard
// gives each node the shards it reads itself; the digest tells plans apart.
#include <gtest/gtest.h>

#include "core/storage/cache_plan.hpp"
#include "core/storage/dataset_packer.hpp"
#include "core/storage/image_list.hpp"
#include "core/storage/sample_source.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

constexpr int images = 60;

std::uint64_t total_bytes(const sample_source& s) {
  std::uint64_t bytes = 0;
  for (std::uint64_t id = 0; id < s.size(); ++id) {
    bytes += s.stored_bytes(id);
  }
  return bytes;
}

std::shared_ptr<const sample_source> folder(const temp_dir& dir) {
  auto source = open_sample_source(testing::make_image_folder(dir, images), dataset_format::folder);
  EXPECT_TRUE(source) << source.error().what();
  return *source;
}

cache_plan partitioned(const sample_source& s, cache_capacity per_node, std::uint64_t rank) {
  return cache_plan::make(s, per_node, 9, {rank, 3, cache_partition::by_hash});
}

TEST(CachePlan, EveryNodeComputesTheSamePartitionAndEachHoldsOnlyItsOwn) {
  temp_dir dir;
  auto source = folder(dir);
  cache_capacity per_node{total_bytes(*source) / 6, 0};  // the cluster's caches: half the set
  std::vector<cache_plan> plans;
  for (std::uint64_t rank = 0; rank < 3; ++rank) {
    plans.push_back(partitioned(*source, per_node, rank));
  }
  std::vector<std::uint64_t> held(3, 0);
  std::vector<std::uint64_t> bytes(3, 0);
  for (std::uint64_t id = 0; id < images; ++id) {
    auto holder = plans[0].holder(id);
    for (const auto& p : plans) {
      EXPECT_EQ(p.holder(id), holder) << "sample " << id;
      EXPECT_EQ(p.tier(id) != cache_tier::none, holder == p.rank()) << "sample " << id;
    }
    if (holder) {
      held[*holder] += 1;
      bytes[*holder] += source->stored_bytes(id);
    }
  }
  for (std::uint64_t rank = 0; rank < 3; ++rank) {
    EXPECT_GT(held[rank], 0u) << "rank " << rank;
    EXPECT_LE(bytes[rank], per_node.memory) << "rank " << rank;
    EXPECT_EQ(plans[rank].samples(cache_tier::memory), held[rank]);
    EXPECT_EQ(plans[rank].bytes(cache_tier::memory), bytes[rank]);
    EXPECT_EQ(plans[rank].digest(), plans[0].digest());
  }
  EXPECT_LT(held[0] + held[1] + held[2], static_cast<std::uint64_t>(images));
}

TEST(CachePlan, CachesThatCoverTheSetHoldEverySampleOnce) {
  temp_dir dir;
  auto source = folder(dir);
  auto plan = partitioned(*source, {total_bytes(*source), 0}, 1);
  std::vector<std::uint64_t> held(3, 0);
  for (std::uint64_t id = 0; id < images; ++id) {
    auto holder = plan.holder(id);
    ASSERT_TRUE(holder) << "sample " << id;
    held[*holder] += 1;
  }
  // The hash order is dealt round the nodes: shares differ by one at most.
  EXPECT_EQ(held[0], 20u);
  EXPECT_EQ(held[1], 20u);
  EXPECT_EQ(held[2], 20u);
}

TEST(CachePlan, MemoryFillsFirstThenTheDiskTier) {
  temp_dir dir;
  auto source = folder(dir);
  const auto total = total_bytes(*source);
  auto plan = cache_plan::make(*source, {total / 3, total / 3}, 4, {});
  EXPECT_GT(plan.samples(cache_tier::memory), 0u);
  EXPECT_GT(plan.samples(cache_tier::disk), 0u);
  EXPECT_LE(plan.bytes(cache_tier::memory), total / 3);
  EXPECT_LE(plan.bytes(cache_tier::disk), total / 3);
  auto memory_only = cache_plan::make(*source, {total / 3, 0}, 4, {});
  for (std::uint64_t id = 0; id < images; ++id) {
    // The memory tier is the same with or without a disk tier behind it.
    EXPECT_EQ(plan.tier(id) == cache_tier::memory, memory_only.tier(id) == cache_tier::memory)
        << "sample " << id;
  }
  EXPECT_NE(plan.digest(), memory_only.digest());
}

TEST(CachePlan, AloneANodePlansOverEverySampleForItself) {
  temp_dir dir;
  auto source = folder(dir);
  auto plan = cache_plan::make(*source, {total_bytes(*source) / 2, 0}, 4, {2, 3});
  std::uint64_t held = 0;
  for (std::uint64_t id = 0; id < images; ++id) {
    auto holder = plan.holder(id);
    EXPECT_TRUE(!holder || *holder == 2u) << "another node is never named";
    held += holder ? 1 : 0;
  }
  EXPECT_EQ(held, plan.samples(cache_tier::memory));
  EXPECT_NE(cache_plan::make(*source, {total_bytes(*source) / 2, 0}, 5, {2, 3}).digest(),
            plan.digest());
}

TEST(CachePlan, ByShardEachNodeHoldsTheShardsItReads) {
  temp_dir dir;
  auto list = scan_image_folder(testing::make_image_folder(dir, images));
  ASSERT_TRUE(list) << list.error().what();
  auto packed = pack_images(*list, dir / "shards", {16 * 1024});
  ASSERT_TRUE(packed) << packed.error().what();
  auto source = open_sample_source(dir / "shards", dataset_format::shards);
  ASSERT_TRUE(source) << source.error().what();
  auto plan =
      cache_plan::make(**source, {total_bytes(**source), 0}, 4, {1, 2, cache_partition::by_shard});
  for (std::uint64_t id = 0; id < images; ++id) {
    EXPECT_EQ(plan.holder(id), *(*source)->shard_of(id) % 2) << "sample " << id;
  }
}

}  // namespace
}  // namespace conveyor
