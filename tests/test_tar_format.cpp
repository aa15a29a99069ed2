// Tar headers and pax records (core/storage/tar_format.hpp), field by field: what Python's
// tarfile and GNU tar write, and what a damaged header must not pass for.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>

#include "core/storage/tar_format.hpp"

namespace conveyor {
namespace {

namespace tf = tar_format;
using block = std::array<std::uint8_t, tf::block_size>;

void put(block& b, std::size_t at, const std::string& text) {
  std::memcpy(b.data() + at, text.data(), text.size());
}

// Sets the checksum field to the block's unsigned sum, as tar writers do.
void seal(block& b) {
  std::memset(b.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (auto byte : b) {
    sum += byte;
  }
  char field[8];
  std::snprintf(field, sizeof field, "%06o", sum);
  std::memcpy(b.data() + 148, field, 7);  // six digits, NUL, and the space left in place
}

block header(const std::string& name, const std::string& size_field, char type = '0',
             const std::string& magic = std::string("ustar\0"
                                                    "00",
                                                    8)) {
  block b{};
  put(b, 0, name);
  put(b, 124, size_field);
  b[156] = static_cast<std::uint8_t>(type);
  put(b, 257, magic);
  seal(b);
  return b;
}

TEST(TarFormat, AnOctalHeaderParses) {
  auto b = header("000001.jpg", "00000001750");
  auto h = tf::parse_header(b.data());
  ASSERT_TRUE(h) << h.error().what();
  EXPECT_EQ(h->name, "000001.jpg");
  EXPECT_EQ(h->size, 1000u);
  EXPECT_EQ(h->type, tf::member_type::regular);
  EXPECT_EQ(tf::padded_size(h->size), 1024u);
  EXPECT_EQ(tf::padded_size(0), 0u);
  EXPECT_EQ(tf::padded_size(512), 512u);
}

TEST(TarFormat, SizesMayHaveSpacesOrBeBase256) {
  EXPECT_EQ(tf::parse_header(header("a.b", "   1750 ").data())->size, 1000u);
  EXPECT_EQ(tf::parse_header(header("a.b", std::string("1750\0", 5)).data())->size, 1000u);
  EXPECT_EQ(tf::parse_header(header("a.b", "").data())->size, 0u);
  // GNU's base-256 for files of 8 GiB and more: 0x80 then big-endian bytes.
  std::string big(12, '\0');
  big[0] = static_cast<char>(0x80);
  big[7] = 0x02;  // 2 << 32
  auto h = tf::parse_header(header("big.bin", big).data());
  ASSERT_TRUE(h) << h.error().what();
  EXPECT_EQ(h->size, std::uint64_t{2} << 32);
  std::string negative(12, '\xff');
  EXPECT_FALSE(tf::parse_header(header("neg.bin", negative).data()));
  std::string huge(12, '\xff');
  huge[0] = static_cast<char>(0x80);
  EXPECT_FALSE(tf::parse_header(header("huge.bin", huge).data())) << "more than 64 bits";
  auto bad = tf::parse_header(header("a.b", "12x4").data());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("not a number"), std::string::npos);
}

TEST(TarFormat, AChangedByteFailsTheChecksum) {
  auto b = header("000001.jpg", "1750");
  b[140] ^= 1;
  auto h = tf::parse_header(b.data());
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code(), errc::corrupt_shard);
  EXPECT_NE(h.error().message().find("checksum"), std::string::npos);
  block zeros{};
  EXPECT_TRUE(tf::is_zero_block(zeros.data()));
  EXPECT_FALSE(tf::is_zero_block(b.data()));
}

TEST(TarFormat, TheSignedSumOfOldTarsIsAccepted) {
  block b{};
  put(b, 0, "\xe9t\xe9.txt");  // bytes over 0x7f: the signed and unsigned sums differ
  put(b, 124, "5");
  b[156] = '0';
  std::memset(b.data() + 148, ' ', 8);
  int sum = 0;
  for (auto byte : b) {
    sum += static_cast<std::int8_t>(byte);
  }
  char field[8];
  std::snprintf(field, sizeof field, "%06o", sum);
  std::memcpy(b.data() + 148, field, 7);
  EXPECT_TRUE(tf::parse_header(b.data()));
}

TEST(TarFormat, UstarPrefixesJoinTheNameButGnuHeadersKeepOtherFieldsThere) {
  auto b = header("000020.jpg", "1");
  put(b, 345, "some/deep/dir");
  seal(b);
  EXPECT_EQ(tf::parse_header(b.data())->name, "some/deep/dir/000020.jpg");
  auto gnu = header("000020.jpg", "1", '0', std::string("ustar  \0", 8));
  put(gnu, 345, "14512345670");  // an atime, not a prefix
  seal(gnu);
  EXPECT_EQ(tf::parse_header(gnu.data())->name, "000020.jpg");
}

TEST(TarFormat, TypeFlagsSayWhatFollows) {
  auto type = [](char flag, const std::string& name = "x.y") {
    return tf::parse_header(header(name, "0", flag).data())->type;
  };
  EXPECT_EQ(type('0'), tf::member_type::regular);
  EXPECT_EQ(type('\0'), tf::member_type::regular);
  EXPECT_EQ(type('7'), tf::member_type::regular);
  EXPECT_EQ(type('\0', "olddir/"), tf::member_type::no_data) << "a v7 directory";
  EXPECT_EQ(type('5'), tf::member_type::no_data);
  EXPECT_EQ(type('2'), tf::member_type::no_data);
  EXPECT_EQ(type('L'), tf::member_type::gnu_long_name);
  EXPECT_EQ(type('x'), tf::member_type::pax_header);
  EXPECT_EQ(type('g'), tf::member_type::other);
  EXPECT_EQ(type('K'), tf::member_type::other);
}

TEST(TarFormat, ReadableNamesStopAtTheFirstUnprintableByte) {
  auto b = header("k3.cls", "1");
  EXPECT_EQ(tf::readable_name(b.data(), tf::block_size), "k3.cls");
  EXPECT_EQ(tf::readable_name(b.data(), 2), "k3");
  b[1] = 0x07;
  EXPECT_EQ(tf::readable_name(b.data(), tf::block_size), "k");
}

expected<tf::pax_fields> pax(const std::string& text) {
  return tf::parse_pax(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
}

TEST(TarFormat, PaxRecordsGivePathAndSize) {
  auto f = pax("30 mtime=1700000000.123456789\n27 path=dir/000001.seg.png\n16 size=9999999\n");
  ASSERT_TRUE(f) << f.error().what();
  EXPECT_EQ(f->path, "dir/000001.seg.png");
  EXPECT_EQ(f->size, 9999999u);
  auto empty = pax(std::string("\0\0\0", 3));
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->path);
  EXPECT_EQ(pax("12 path=a=b\n")->path, "a=b") << "the first '=' ends the key";
}

TEST(TarFormat, MalformedPaxRecordsAreRefused) {
  for (const char* bad : {"0 path=x\n", "5 path=x\n", "99 path=x\n", "11 path=ab\t", "9 pathx\n",
                          "7 =abc\n", "x path=a\n", "path=a\n", "12 size=12a\n", "3 \n"}) {
    auto f = pax(bad);
    EXPECT_FALSE(f) << bad;
  }
}

TEST(TarFormat, LongNamesEndAtTheirFirstNul) {
  const std::uint8_t data[] = {'a', '/', 'b', '.', 'j', 'p', 'g', 0, 'z', 'z'};
  EXPECT_EQ(tf::long_name(data, sizeof data), "a/b.jpg");
  EXPECT_EQ(tf::long_name(data, 3), "a/b");
}

}  // namespace
}  // namespace conveyor
