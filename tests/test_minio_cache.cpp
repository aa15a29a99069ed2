// The MinIO cache (core/storage/minio_cache.hpp) as plain code over a real image folder: its
// plan is a function of the seed and fits the capacity by stored size; it fills on first read,
// serves copies, and never evicts or grows past its capacity, also when readers race; its disk
// tier (a real file in a real directory) gives back exactly the bytes it was given.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <thread>

#include "core/storage/dataset_writer.hpp"
#include "core/storage/fill_claims.hpp"
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

// 4 threads read every sample through `cache` at once, as a node's readers do; the number of
// storage reads they made.
int read_through_from_racing_readers(minio_cache& cache, const sample_source& source) {
  std::atomic<int> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      for (std::uint64_t id = 0; id < images; ++id) {
        auto r = cache.read_through(
            id, [&] { return source.read(id); }, std::chrono::seconds(60));
        ASSERT_TRUE(r.got);
        reads += r.from_storage ? 1 : 0;
      }
    });
  }
  for (auto& t : readers) {
    t.join();
  }
  return reads;
}

// Until `done` is true or a minute has passed (a hung thread fails the test, never the run).
template <typename Done>
bool within_a_minute(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::yield();
  }
  return true;
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
  const auto reads = read_through_from_racing_readers(*cache, *source);
  EXPECT_EQ(cache->cached_samples(), cache->member_count());
  EXPECT_LE(cache->cached_bytes(), cache->capacity());
  // Each member from storage once; each other sample by every reader.
  EXPECT_EQ(static_cast<std::uint64_t>(reads),
            cache->member_count() + 4 * (images - cache->member_count()));
  for (std::uint64_t id = 0; id < images; ++id) {
    EXPECT_EQ(cache->find(id).has_value(), cache->member(id)) << "sample " << id;
  }
}

// A read_through of sample `id` on its own thread whose storage read begins, then waits until
// release() before it gives `result()`: another reader can find it under way.
class held_read {
 public:
  held_read(minio_cache& cache, std::uint64_t id, std::function<expected<record>()> result) {
    done_ = std::async(std::launch::async, [this, &cache, id, result = std::move(result)] {
      return cache.read_through(
          id,
          [&] {
            reading_.set_value();
            go_.get_future().wait_for(std::chrono::minutes(1));
            return result();
          },
          std::chrono::minutes(1));
    });
  }
  /// Its storage read has begun (false when it did not within a minute).
  bool reading() {
    return reading_.get_future().wait_for(std::chrono::minutes(1)) == std::future_status::ready;
  }
  cache_read release() {
    go_.set_value();
    return done_.get();
  }

 private:
  std::promise<void> reading_;
  std::promise<void> go_;
  std::future<cache_read> done_;
};

// Two threads ask for one member sample at once: the second waits for the first's read and
// takes the sample from the cache; it never reads storage.
TEST(MinioCache, AReaderThatFindsTheSampleBeingReadWaitsForThatRead) {
  temp_dir dir;
  auto source = folder(dir);
  auto cache = minio_cache::plan(*source, total_bytes(*source), 2);
  held_read first(*cache, 0, [&] { return source->read(0); });
  ASSERT_TRUE(first.reading());
  std::atomic<int> second_reads{0};
  auto second = std::async(std::launch::async, [&] {
    return cache->read_through(
        0,
        [&] {
          ++second_reads;
          return source->read(0);
        },
        std::chrono::minutes(1));
  });
  ASSERT_TRUE(within_a_minute([&] { return cache->waiting_readers() == 1; }));
  auto a = first.release();
  auto b = second.get();
  ASSERT_TRUE(a.got && b.got);
  EXPECT_TRUE(a.from_storage);
  EXPECT_FALSE(b.from_storage);
  EXPECT_EQ(second_reads, 0);
  EXPECT_EQ(b.got->payload, a.got->payload);
}

// The wait is bounded: past it, a reader reads for itself rather than stall; and a read that
// failed leaves the next reader to read the sample.
TEST(MinioCache, AReaderWaitsForAnothersReadOnlyUntilItsDeadline) {
  temp_dir dir;
  auto source = folder(dir);
  auto cache = minio_cache::plan(*source, total_bytes(*source), 2);
  held_read first(*cache, 1, []() -> expected<record> {
    return error{errc::io_error, "the disk went away"};
  });
  ASSERT_TRUE(first.reading());
  auto impatient = cache->read_through(
      1, [&] { return source->read(1); }, std::chrono::milliseconds(0));
  ASSERT_TRUE(impatient.got);
  EXPECT_TRUE(impatient.from_storage);  // its own read: the first still holds the claim
  auto failed = first.release();
  ASSERT_FALSE(failed.got);
  EXPECT_NE(failed.got.error().message().find("the disk went away"), std::string::npos);
  auto later = cache->read_through(
      1, [&] { return source->read(1); }, std::chrono::minutes(1));
  ASSERT_TRUE(later.got);
  EXPECT_FALSE(later.from_storage);  // the impatient reader's read filled it
}

// Claims one at a time per sample; a claim taken past its deadline is empty; a released claim
// can be taken again.
TEST(FillClaims, OneHolderPerSampleAndABoundedWait) {
  fill_claims claims;
  const auto now = fill_claims::clock::now();
  auto a = claims.take(7, now);
  EXPECT_TRUE(a.held());
  EXPECT_FALSE(claims.take(7, now).held());
  EXPECT_TRUE(claims.take(8, now).held());
  auto waiter = std::async(std::launch::async, [&] {
    return claims.take(7, fill_claims::clock::now() + std::chrono::minutes(1)).held();
  });
  ASSERT_TRUE(within_a_minute([&] { return claims.waiting() == 1; }));
  a = fill_claims::claim{};  // released: the waiter gets it
  EXPECT_TRUE(waiter.get());
  EXPECT_EQ(claims.waiting(), 0u);
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
  EXPECT_EQ(read_through_from_racing_readers(*cache, *source), images);
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
