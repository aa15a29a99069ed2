// The MinIO cache (core/storage/minio_cache.hpp) as plain code over a real image folder: its
// plan is a function of the seed and fits the capacity by stored size; it fills on first read,
// serves copies, and never evicts or grows past its capacity, also when readers race; its disk
// tier (a real file in a real directory) gives back exactly the bytes it was given.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "core/storage/dataset_writer.hpp"
#include "core/storage/minio_cache.hpp"
#include "core/storage/record_parts.hpp"
#include "core/storage/sample_source.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

constexpr int images = 40;

std::shared_ptr<const sample_source> folder(const temp_dir& dir) {
  auto source = open_sample_source(testing::make_image_folder(dir, images), dataset_format::folder);
  EXPECT_TRUE(source) << source.error().what();
  return *source;
}

std::uint64_t total_bytes(const sample_source& s) {
  std::uint64_t bytes = 0;
  for (std::uint64_t id = 0; id < s.size(); ++id) {
    bytes += s.stored_bytes(id);
  }
  return bytes;
}

std::vector<bool> members_of(const minio_cache& c, std::uint64_t n) {
  std::vector<bool> out;
  for (std::uint64_t id = 0; id < n; ++id) {
    out.push_back(c.member(id));
  }
  return out;
}

// 4 threads read every sample through `cache` at once, as a node's readers do.
void read_through_from_racing_readers(minio_cache& cache, const sample_source& source) {
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      for (std::uint64_t id = 0; id < images; ++id) {
        if (!cache.find(id)) {
          auto r = source.read(id);
          ASSERT_TRUE(r);
          cache.fill(id, *r);
        }
      }
    });
  }
  for (auto& t : readers) {
    t.join();
  }
}

TEST(MinioCache, ThePlanIsAFunctionOfTheSeedAndFitsTheCapacity) {
  temp_dir dir;
  auto source = folder(dir);
  const auto half = total_bytes(*source) / 2;
  auto a = minio_cache::plan(*source, half, 7);
  auto again = minio_cache::plan(*source, half, 7);
  auto other = minio_cache::plan(*source, half, 8);
  EXPECT_EQ(members_of(*a, images), members_of(*again, images));
  EXPECT_NE(members_of(*a, images), members_of(*other, images));
  EXPECT_LE(a->planned_bytes(), half);
  EXPECT_GT(a->member_count(), 0u);
  EXPECT_LT(a->member_count(), static_cast<std::uint64_t>(images));
  std::uint64_t planned = 0;
  for (std::uint64_t id = 0; id < images; ++id) {
    planned += a->member(id) ? source->stored_bytes(id) : 0;
  }
  EXPECT_EQ(planned, a->planned_bytes());
  EXPECT_EQ(minio_cache::plan(*source, total_bytes(*source), 7)->member_count(),
            static_cast<std::uint64_t>(images));
  EXPECT_EQ(minio_cache::plan(*source, 1, 7)->member_count(), 0u);
}

TEST(MinioCache, FillsOnFirstReadServesCopiesAndNeverEvicts) {
  temp_dir dir;
  auto source = folder(dir);
  auto cache = minio_cache::plan(*source, total_bytes(*source) / 2, 3);
  std::uint64_t member = 0;
  std::uint64_t outsider = 0;
  while (!cache->member(member)) {
    ++member;
  }
  while (cache->member(outsider)) {
    ++outsider;
  }
  auto r = source->read(member);
  ASSERT_TRUE(r);
  EXPECT_FALSE(cache->find(member));  // filled only on its first read
  EXPECT_TRUE(cache->fill(member, *r));
  EXPECT_FALSE(cache->fill(member, *r));  // once
  auto hit = cache->find(member);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->payload, r->payload);
  EXPECT_EQ(hit->key, r->key);
  EXPECT_EQ(hit->label, r->label);
  auto other = source->read(outsider);
  ASSERT_TRUE(other);
  EXPECT_FALSE(cache->fill(outsider, *other));  // not in the plan: never kept
  EXPECT_FALSE(cache->find(outsider));
  EXPECT_EQ(cache->cached_samples(), 1u);
  EXPECT_EQ(cache->cached_bytes(), r->payload.size());
}

TEST(MinioCache, RacingReadersFillEveryMemberOnceWithinTheCapacity) {
  temp_dir dir;
  auto source = folder(dir);
  auto cache = minio_cache::plan(*source, total_bytes(*source) * 3 / 4, 11);
  read_through_from_racing_readers(*cache, *source);
  EXPECT_EQ(cache->cached_samples(), cache->member_count());
  EXPECT_LE(cache->cached_bytes(), cache->capacity());
  for (std::uint64_t id = 0; id < images; ++id) {
    EXPECT_EQ(cache->find(id).has_value(), cache->member(id)) << "sample " << id;
  }
}

// A cache of this node alone with `memory` bytes in memory and `disk` on the disk tier in
// `where`.
std::shared_ptr<minio_cache> tiered(const sample_source& source, std::uint64_t memory,
                                    std::uint64_t disk, const std::filesystem::path& where) {
  cache_capacity capacity{memory, disk};
  auto tier = disk_tier::open(where, disk);
  EXPECT_TRUE(tier) << tier.error().what();
  auto plan = std::make_shared<const cache_plan>(cache_plan::make(source, capacity, 5, {}));
  return std::make_shared<minio_cache>(std::move(plan), capacity, std::move(*tier));
}

TEST(MinioCache, TheDiskTierKeepsWhatMemoryCannotAndGivesTheSameBytesBack) {
  temp_dir dir;
  auto source = folder(dir);
  const auto total = total_bytes(*source);
  auto cache = tiered(*source, total / 4, total, dir.path());
  const auto& plan = cache->layout();
  ASSERT_GT(plan.samples(cache_tier::memory), 0u);
  ASSERT_GT(plan.samples(cache_tier::disk), 0u);
  EXPECT_EQ(cache->member_count(), static_cast<std::uint64_t>(images));  // both tiers: all
  for (std::uint64_t id = 0; id < images; ++id) {
    auto r = source->read(id);
    ASSERT_TRUE(r);
    EXPECT_TRUE(cache->fill(id, *r)) << "sample " << id;
  }
  EXPECT_EQ(cache->cached_samples(), static_cast<std::uint64_t>(images));
  EXPECT_EQ(cache->cached_bytes(), total);
  EXPECT_EQ(cache->disk_bytes(), plan.bytes(cache_tier::disk));
  for (std::uint64_t id = 0; id < images; ++id) {
    auto hit = cache->find(id);
    auto r = source->read(id);
    ASSERT_TRUE(hit && r) << "sample " << id;
    EXPECT_EQ(hit->payload, r->payload) << "sample " << id;
    EXPECT_EQ(hit->key, r->key);
    EXPECT_EQ(hit->label, r->label);
  }
  // The tier's file has no name: nothing is left in its directory.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_TRUE(entry.is_directory()) << entry.path();
  }
}

TEST(MinioCache, BothTiersKeepARecordOfSeveralPartsWhole) {
  temp_dir dir;
  auto writer = dataset_writer::create(dir / "shards", {});
  ASSERT_TRUE(writer);
  for (int i = 0; i < images; ++i) {
    auto cls = std::to_string(i % 5);
    auto payload =
        encode_parts({{"jpg", testing::make_jpeg(30 + i, 20, static_cast<std::uint64_t>(i))},
                      {"cls", {cls.begin(), cls.end()}}});
    ASSERT_TRUE(writer->append(record{"s" + std::to_string(i), i % 5, payload, true}));
  }
  ASSERT_TRUE(writer->finish());
  auto source = open_sample_source(dir / "shards", dataset_format::shards);
  ASSERT_TRUE(source) << source.error().what();
  const auto total = total_bytes(**source);
  std::filesystem::create_directories(dir / "tier");
  auto cache = tiered(**source, total / 3, total, dir / "tier");
  ASSERT_GT(cache->layout().samples(cache_tier::disk), 0u);
  for (std::uint64_t id = 0; id < images; ++id) {
    ASSERT_TRUE(cache->fill(id, *(*source)->read(id))) << "sample " << id;
  }
  for (std::uint64_t id = 0; id < images; ++id) {
    auto hit = cache->find(id);
    ASSERT_TRUE(hit) << "sample " << id;
    EXPECT_TRUE(hit->multipart) << "sample " << id;
    EXPECT_TRUE(parts_of(*hit)) << "sample " << id;
    EXPECT_TRUE((*source)->check(id, *hit)) << "sample " << id;
  }
}

TEST(MinioCache, RacingReadersFillTheDiskTierOnce) {
  temp_dir dir;
  auto source = folder(dir);
  auto cache = tiered(*source, 0, total_bytes(*source), dir.path());
  read_through_from_racing_readers(*cache, *source);
  EXPECT_EQ(cache->cached_samples(), static_cast<std::uint64_t>(images));
  EXPECT_EQ(cache->disk_bytes(), total_bytes(*source));  // no sample written twice
}

TEST(MinioCache, ADiskTierNeedsADirectory) {
  temp_dir dir;
  auto missing = disk_tier::open(dir / "nowhere", 1000);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("nowhere"), std::string::npos);
  auto tier = disk_tier::open(dir.path(), 10);
  ASSERT_TRUE(tier);
  EXPECT_EQ((*tier)->reserve(6), 0u);
  EXPECT_FALSE((*tier)->reserve(6));  // 12 > 10
  EXPECT_EQ((*tier)->reserve(4), 6u);
}

}  // namespace
}  // namespace conveyor
