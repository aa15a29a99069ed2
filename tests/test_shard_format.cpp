// Round trips of the record shard format: random access and sequential streaming.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "core/storage/shard_reader.hpp"
#include "core/storage/shard_stream.hpp"
#include "core/storage/shard_writer.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

std::vector<record> sample_records(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<record> out;
  for (std::size_t i = 0; i < n; ++i) {
    record r;
    r.key = "class_" + std::to_string(i % 3) + "/img_" + std::to_string(i) + ".jpg";
    r.label = static_cast<std::int32_t>(i % 3) - 1;  // negative labels survive too
    r.payload.resize(rng() % 5000);                  // includes empty payloads now and then
    for (auto& b : r.payload) {
      b = static_cast<std::uint8_t>(rng());
    }
    out.push_back(std::move(r));
  }
  out[0].payload.clear();
  out[1].payload = testing::make_jpeg(64, 48, 7);  // real JPEG bytes among them
  return out;
}

std::filesystem::path write_shard(const std::filesystem::path& path,
                                  const std::vector<record>& records) {
  auto writer = shard_writer::create(path);
  EXPECT_TRUE(writer) << writer.error().what();
  for (const auto& r : records) {
    auto ok = writer->append(r.key, r.label, r.payload.data(), r.payload.size());
    EXPECT_TRUE(ok) << ok.error().what();
  }
  auto summary = writer->finish();
  EXPECT_TRUE(summary) << summary.error().what();
  EXPECT_EQ(summary->records, records.size());
  EXPECT_EQ(summary->bytes, std::filesystem::file_size(path));
  return path;
}

void expect_same(const record& a, const record& b) {
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.label, b.label);
  EXPECT_EQ(a.payload, b.payload);
}

TEST(ShardFormat, RandomAccessReturnsEveryRecordInAnyOrder) {
  temp_dir dir;
  auto records = sample_records(200, 1);
  auto reader = shard_reader::open(write_shard(dir / "a.cvs", records));
  ASSERT_TRUE(reader) << reader.error().what();
  ASSERT_EQ(reader->size(), records.size());
  std::vector<std::size_t> order(records.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(2));
  for (auto i : order) {
    auto r = reader->read(i);
    ASSERT_TRUE(r) << r.error().what();
    expect_same(*r, records[i]);
  }
}

TEST(ShardFormat, StreamingReturnsEveryRecordInOrderForAnyChunkSize) {
  temp_dir dir;
  auto records = sample_records(150, 3);
  auto reader = shard_reader::open(write_shard(dir / "a.cvs", records));
  ASSERT_TRUE(reader) << reader.error().what();
  // 1 byte forces one record per chunk; 10 KiB mixes; 1 GiB holds the whole shard.
  for (std::uint64_t chunk : {std::uint64_t{1}, std::uint64_t{10240}, std::uint64_t{1} << 30}) {
    shard_stream stream(*reader, chunk);
    for (const auto& want : records) {
      auto r = stream.next();
      ASSERT_TRUE(r) << r.error().what();
      ASSERT_TRUE(r->has_value());
      expect_same(**r, want);
    }
    auto end = stream.next();
    ASSERT_TRUE(end);
    EXPECT_FALSE(end->has_value());
  }
}

TEST(ShardFormat, EmptyShardRoundTrips) {
  temp_dir dir;
  auto reader = shard_reader::open(write_shard(dir / "empty.cvs", {}));
  ASSERT_TRUE(reader) << reader.error().what();
  EXPECT_EQ(reader->size(), 0u);
  shard_stream stream(*reader);
  auto end = stream.next();
  ASSERT_TRUE(end);
  EXPECT_FALSE(end->has_value());
}

TEST(ShardFormat, UnfinishedWriterLeavesNoShardUnderTheFinalName) {
  temp_dir dir;
  {
    auto writer = shard_writer::create(dir / "a.cvs");
    ASSERT_TRUE(writer);
    std::vector<std::uint8_t> payload(100, 1);
    ASSERT_TRUE(writer->append("k", 0, payload.data(), payload.size()));
  }  // dropped without finish(), as if the packer crashed
  EXPECT_FALSE(std::filesystem::exists(dir / "a.cvs"));
  auto reader = shard_reader::open(dir / "a.cvs.partial");
  ASSERT_FALSE(reader);
  EXPECT_EQ(reader.error().code(), errc::corrupt_shard);
}

TEST(ShardFormat, WriterRefusesOverlongKeys) {
  temp_dir dir;
  auto writer = shard_writer::create(dir / "a.cvs");
  ASSERT_TRUE(writer);
  std::string key(shard_format::max_key_size + 1, 'k');
  auto ok = writer->append(key, 0, nullptr, 0);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code(), errc::invalid_argument);
}

}  // namespace
}  // namespace conveyor
