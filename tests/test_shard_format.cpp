// Round trips of the record shard format: random access and sequential streaming.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "core/base/little_endian.hpp"
#include "core/storage/record_parts.hpp"
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
  EXPECT_EQ(a.multipart, b.multipart);
}

// sample_records with every other record made multipart (its payload and a cls part).
std::vector<record> mixed_records(std::size_t n, std::uint64_t seed) {
  auto records = sample_records(n, seed);
  for (std::size_t i = 0; i < records.size(); i += 2) {
    auto& r = records[i];
    auto cls = std::to_string(r.label);
    r.payload = encode_parts({{"jpg", r.payload}, {"cls", {cls.begin(), cls.end()}}});
    r.multipart = true;
  }
  return records;
}

std::filesystem::path write_records(const std::filesystem::path& path,
                                    const std::vector<record>& records) {
  auto writer = shard_writer::create(path);
  EXPECT_TRUE(writer) << writer.error().what();
  for (const auto& r : records) {
    auto ok = writer->append(r);
    EXPECT_TRUE(ok) << ok.error().what();
  }
  auto summary = writer->finish();
  EXPECT_TRUE(summary) << summary.error().what();
  EXPECT_EQ(summary->version, shard_format::multipart_version);
  return path;
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

TEST(ShardFormat, ShardsOfSinglePartRecordsStayVersion1) {
  temp_dir dir;
  auto writer = shard_writer::create(dir / "a.cvs");
  ASSERT_TRUE(writer);
  for (const auto& r : sample_records(5, 9)) {
    ASSERT_TRUE(writer->append(r));  // single part, through the record overload too
  }
  auto summary = writer->finish();
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->version, shard_format::first_version);
  auto reader = shard_reader::open(dir / "a.cvs");
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->version(), shard_format::first_version);
  EXPECT_EQ(testing::read_file(dir / "a.cvs")[8], 1) << "the file header's version";
}

TEST(ShardFormat, MultipartRecordsRoundTripInVersion2) {
  temp_dir dir;
  auto records = mixed_records(120, 4);
  auto reader = shard_reader::open(write_records(dir / "v2.cvs", records));
  ASSERT_TRUE(reader) << reader.error().what();
  EXPECT_EQ(reader->version(), shard_format::multipart_version);
  ASSERT_EQ(reader->size(), records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    auto r = reader->read(i);
    ASSERT_TRUE(r) << r.error().what();
    expect_same(*r, records[i]);
    auto parts = parts_of(*r);
    ASSERT_TRUE(parts) << parts.error().what();
    EXPECT_EQ(parts->size(), r->multipart ? 2u : 1u);
    EXPECT_TRUE(reader->check(i, *r));
  }
  shard_stream stream(*reader, 4096);
  for (const auto& want : records) {
    auto r = stream.next();
    ASSERT_TRUE(r && r->has_value());
    expect_same(**r, want);
  }
}

TEST(ShardFormat, TheCheckTellsAMultipartRecordFromASinglePartOne) {
  temp_dir dir;
  auto records = mixed_records(4, 5);
  auto reader = shard_reader::open(write_records(dir / "v2.cvs", records));
  ASSERT_TRUE(reader);
  for (std::size_t i = 0; i < 2; ++i) {
    auto copy = records[i];
    copy.multipart = !copy.multipart;
    auto same = reader->check(i, copy);
    ASSERT_FALSE(same) << "record " << i;
    EXPECT_EQ(same.error().code(), errc::checksum_mismatch);
    EXPECT_NE(same.error().message().find("part"), std::string::npos) << same.error().message();
  }
}

// A version 1 shard as the first writer made it, byte by byte: a file header of version 1,
// records whose header field 12..16 is reserved (here not even 0: version 1 never read it),
// the index and the trailer.
std::vector<std::uint8_t> version1_shard(const std::vector<record>& records) {
  namespace le = little_endian;
  std::vector<std::uint8_t> file(shard_format::file_header_size);
  std::memcpy(file.data(), "CNVYSHRD", 8);
  le::store<std::uint32_t>(file.data() + 8, 1);
  le::store<std::uint64_t>(file.data() + 24, shard_format::checksum(file.data(), 24));
  std::vector<std::uint8_t> index;
  for (const auto& r : records) {
    std::vector<std::uint8_t> head(shard_format::record_header_size);
    std::memcpy(head.data(), "REC1", 4);
    le::store<std::uint32_t>(head.data() + 4, static_cast<std::uint32_t>(r.key.size()));
    le::store<std::int32_t>(head.data() + 8, r.label);
    le::store<std::uint32_t>(head.data() + 12, 0xffffffffu);
    le::store<std::uint64_t>(head.data() + 16, r.payload.size());
    const auto* key = reinterpret_cast<const std::uint8_t*>(r.key.data());
    le::store<std::uint64_t>(head.data() + 24,
                             shard_format::record_checksum(head.data(), key, r.key.size(),
                                                           r.payload.data(), r.payload.size()));
    std::vector<std::uint8_t> entry(16);
    le::store<std::uint64_t>(entry.data(), file.size());
    le::store<std::uint64_t>(entry.data() + 8, head.size() + r.key.size() + r.payload.size());
    index.insert(index.end(), entry.begin(), entry.end());
    file.insert(file.end(), head.begin(), head.end());
    file.insert(file.end(), r.key.begin(), r.key.end());
    file.insert(file.end(), r.payload.begin(), r.payload.end());
  }
  std::vector<std::uint8_t> trailer(shard_format::trailer_size);
  le::store<std::uint64_t>(trailer.data(), file.size());
  le::store<std::uint64_t>(trailer.data() + 8, records.size());
  le::store<std::uint64_t>(trailer.data() + 16, shard_format::checksum(index.data(), index.size()));
  le::store<std::uint64_t>(trailer.data() + 24, shard_format::checksum(trailer.data(), 24));
  std::memcpy(trailer.data() + 32, "CNVYEND1", 8);
  file.insert(file.end(), index.begin(), index.end());
  file.insert(file.end(), trailer.begin(), trailer.end());
  return file;
}

TEST(ShardFormat, Version1ShardsStillRead) {
  temp_dir dir;
  auto records = sample_records(30, 6);
  testing::write_file(dir / "v1.cvs", version1_shard(records));
  auto reader = shard_reader::open(dir / "v1.cvs");
  ASSERT_TRUE(reader) << reader.error().what();
  EXPECT_EQ(reader->version(), shard_format::first_version);
  ASSERT_EQ(reader->size(), records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    auto r = reader->read(i);
    ASSERT_TRUE(r) << r.error().what();
    expect_same(*r, records[i]);  // one part each, whatever the reserved field holds
    EXPECT_TRUE(reader->check(i, *r));
  }
}

TEST(ShardFormat, UnknownVersionsAndFlagsAreRefused) {
  temp_dir dir;
  auto bytes = testing::read_file(write_records(dir / "v2.cvs", mixed_records(3, 7)));
  auto with = [&](std::size_t at, std::uint32_t value) {
    auto changed = bytes;
    little_endian::store<std::uint32_t>(changed.data() + at, value);
    if (at < shard_format::file_header_size) {  // keep the file header's checksum right
      little_endian::store<std::uint64_t>(changed.data() + 24,
                                          shard_format::checksum(changed.data(), 24));
    }
    testing::write_file(dir / "changed.cvs", changed);
    return shard_reader::open(dir / "changed.cvs");
  };
  auto v3 = with(8, 3);
  ASSERT_FALSE(v3);
  EXPECT_NE(v3.error().message().find("unsupported shard version 3"), std::string::npos)
      << v3.error().message();
  auto flags = with(shard_format::file_header_size + 12, 0x3);
  ASSERT_TRUE(flags) << "the index is intact";
  auto r = flags->read(0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::corrupt_shard);
  EXPECT_NE(r.error().message().find("unknown record flags 2"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("record 0"), std::string::npos);
}

}  // namespace
}  // namespace conveyor
