// Every kind of damaged shard gives an error value that names the shard (and the record).
#include <gtest/gtest.h>

#include "core/base/little_endian.hpp"
#include "core/storage/shard_reader.hpp"
#include "core/storage/shard_stream.hpp"
#include "core/storage/shard_writer.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::read_file;
using testing::temp_dir;
using testing::write_file;

class ShardCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    auto writer = shard_writer::create(path_);
    ASSERT_TRUE(writer);
    for (int i = 0; i < 10; ++i) {
      auto payload = testing::make_jpeg(40 + i, 30, static_cast<std::uint64_t>(i));
      ASSERT_TRUE(writer->append("img_" + std::to_string(i), i, payload.data(), payload.size()));
    }
    ASSERT_TRUE(writer->finish());
    bytes_ = read_file(path_);
    auto reader = shard_reader::open(path_);
    ASSERT_TRUE(reader);
    offset_of_record_4_ = reader->entry(4).offset;
  }

  expected<shard_reader> reopen_with(const std::vector<std::uint8_t>& bytes) {
    write_file(path_, bytes);
    return shard_reader::open(path_);
  }

  void expect_open_error(const std::vector<std::uint8_t>& bytes, const std::string& needle) {
    auto reader = reopen_with(bytes);
    ASSERT_FALSE(reader);
    EXPECT_EQ(reader.error().code(), errc::corrupt_shard);
    EXPECT_NE(reader.error().message().find(path_.string()), std::string::npos)
        << reader.error().message();
    EXPECT_NE(reader.error().message().find(needle), std::string::npos) << reader.error().message();
  }

  temp_dir dir_;
  std::filesystem::path path_ = dir_ / "s.cvs";
  std::vector<std::uint8_t> bytes_;
  std::uint64_t offset_of_record_4_ = 0;
};

TEST_F(ShardCorruption, FlippedPayloadByteNamesShardAndRecord) {
  auto bytes = bytes_;
  bytes[offset_of_record_4_ + shard_format::record_header_size + 20] ^= 0x01;
  auto reader = reopen_with(bytes);
  ASSERT_TRUE(reader) << "the index is intact, so the shard opens";
  auto r = reader->read(4);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::checksum_mismatch);
  EXPECT_NE(r.error().message().find(path_.string() + " record 4"), std::string::npos)
      << r.error().message();
  EXPECT_TRUE(reader->read(3)) << "neighbours stay readable";
  EXPECT_TRUE(reader->read(5));
}

TEST_F(ShardCorruption, StreamingReportsTheBadRecordAndGoesOn) {
  auto bytes = bytes_;
  bytes[offset_of_record_4_ + shard_format::record_header_size + 3] ^= 0x80;
  auto reader = reopen_with(bytes);
  ASSERT_TRUE(reader);
  shard_stream stream(*reader, 1);
  int good = 0;
  int bad = 0;
  for (;;) {
    auto r = stream.next();
    if (!r) {
      ++bad;
      EXPECT_NE(r.error().message().find("record 4"), std::string::npos);
      continue;
    }
    if (!r->has_value()) {
      break;
    }
    ++good;
  }
  EXPECT_EQ(good, 9);
  EXPECT_EQ(bad, 1);
}

TEST_F(ShardCorruption, FlippedLabelByteIsCaughtByTheRecordChecksum) {
  auto bytes = bytes_;
  bytes[offset_of_record_4_ + 8] ^= 0x02;  // the label field of record 4's header
  auto reader = reopen_with(bytes);
  ASSERT_TRUE(reader);
  auto r = reader->read(4);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::checksum_mismatch);
}

TEST_F(ShardCorruption, HugePayloadSizeInAHeaderIsRejectedWithoutReadingPastTheRecord) {
  auto bytes = bytes_;
  little_endian::store<std::uint64_t>(bytes.data() + offset_of_record_4_ + 16, ~0ull - 8);
  auto reader = reopen_with(bytes);
  ASSERT_TRUE(reader);
  auto r = reader->read(4);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::corrupt_shard);
  EXPECT_NE(r.error().message().find("record 4"), std::string::npos);
}

TEST_F(ShardCorruption, TruncatedShardIsDetected) {
  for (std::size_t keep : {bytes_.size() - 1, bytes_.size() / 2, std::size_t{50}, std::size_t{0}}) {
    std::vector<std::uint8_t> cut(bytes_.begin(), bytes_.begin() + static_cast<long>(keep));
    auto reader = reopen_with(cut);
    ASSERT_FALSE(reader) << "kept " << keep << " bytes";
    EXPECT_EQ(reader.error().code(), errc::corrupt_shard);
    EXPECT_NE(reader.error().message().find(path_.string()), std::string::npos);
  }
}

TEST_F(ShardCorruption, WrongMagicIsNamed) {
  auto bytes = bytes_;
  bytes[0] = 'X';
  expect_open_error(bytes, "wrong magic");
}

TEST_F(ShardCorruption, WrongVersionIsNamed) {
  auto bytes = bytes_;
  little_endian::store<std::uint32_t>(bytes.data() + 8, 7);
  expect_open_error(bytes, "unsupported shard version 7");
}

TEST_F(ShardCorruption, DamagedIndexIsDetected) {
  auto bytes = bytes_;
  auto index_at = bytes.size() - shard_format::trailer_size - 3 * shard_format::index_entry_size;
  bytes[index_at] ^= 0x10;
  expect_open_error(bytes, "index checksum mismatch");
}

TEST_F(ShardCorruption, DamagedTrailerIsDetected) {
  auto bytes = bytes_;
  bytes[bytes.size() - shard_format::trailer_size + 1] ^= 0x01;
  expect_open_error(bytes, "trailer checksum mismatch");
}

TEST_F(ShardCorruption, AppendedGarbageIsDetected) {
  auto bytes = bytes_;
  bytes.insert(bytes.end(), {1, 2, 3});
  expect_open_error(bytes, "no valid trailer");
}

TEST(ShardOpen, MissingPathIsNotFoundAndNamed) {
  temp_dir dir;
  auto reader = shard_reader::open(dir / "nope.cvs");
  ASSERT_FALSE(reader);
  EXPECT_EQ(reader.error().code(), errc::not_found);
  EXPECT_NE(reader.error().message().find("nope.cvs"), std::string::npos);
}

TEST(ShardOpen, DirectoryIsNotAShard) {
  temp_dir dir;
  auto reader = shard_reader::open(dir.path());
  ASSERT_FALSE(reader);
  EXPECT_EQ(reader.error().code(), errc::io_error);
}

TEST(ShardOpen, OutOfRangeRecordIsAnErrorNotACrash) {
  temp_dir dir;
  auto writer = shard_writer::create(dir / "a.cvs");
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->finish());
  auto reader = shard_reader::open(dir / "a.cvs");
  ASSERT_TRUE(reader);
  auto r = reader->read(0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::not_found);
}

}  // namespace
}  // namespace conveyor
