// Parts left in their files (dataset.map_parts): a record holds a descriptor, a step reads the
// bytes in place; a file replaced or rewritten since the read is refused naming it, a
// descriptor that lies is refused, and the steps that decode whole parts refuse a descriptor.
// Only a part its reader left in place is one: bytes that look like a descriptor are data, and
// a descriptor's file opens only when it is a regular file (never a FIFO, even through a link).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "core/storage/file_slice.hpp"
#include "core/storage/part_files.hpp"
#include "core/storage/record_parts.hpp"
#include "core/transforms/sample_parts.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

sample_state sample_of(record r) {
  sample_state s;
  hold_record(s, std::move(r));
  return s;
}

// A sample whose one part "x.npy" holds `bytes`, left in place by its reader or not.
sample_state sample_with_part(std::vector<std::uint8_t> bytes, bool in_place) {
  record r{"key", 0, encode_parts({{"x.npy", std::move(bytes)}}), true};
  if (in_place) {
    r.in_place = {0};
  }
  return sample_of(std::move(r));
}

TEST(FileSlice, AMappedPartReadsInPlaceAndARewrittenFileIsRefused) {
  testing::temp_dir dir;
  testing::write_file(dir / "case_00000_x.npy", {1, 2, 3, 4, 5});
  testing::write_file(dir / "case_00000_y.npy", {9});
  auto scanned = scan_npy_pairs(dir.path());
  ASSERT_TRUE(scanned) << scanned.error().what();
  ASSERT_EQ(scanned->samples.size(), 1u);
  EXPECT_EQ(scanned->samples[0].key, "case_00000");
  auto r = read_part_files(scanned->samples[0], {"x.npy"});
  ASSERT_TRUE(r) << r.error().what();
  auto s = sample_of(std::move(*r));

  auto x = open_sample_part(s, "x.npy");
  ASSERT_TRUE(x) << x.error().what();
  std::vector<std::uint8_t> got(3);
  ASSERT_TRUE(x->bytes->read_at(1, got.data(), got.size()));
  EXPECT_EQ(got, (std::vector<std::uint8_t>{2, 3, 4}));
  EXPECT_FALSE(x->bytes->read_at(3, got.data(), got.size())) << "past the part's end";
  auto y = find_sample_part(s, "y.npy");
  ASSERT_TRUE(y) << "a part in the record decodes as before";
  auto whole = find_sample_part(s, "x.npy");
  ASSERT_FALSE(whole) << "a whole-part decode of a part left in its file";
  EXPECT_NE(whole.error().message().find("map_parts"), std::string::npos);

  testing::write_file(dir / "case_00000_x.npy", {7, 7, 7, 7, 7, 7});
  auto changed = open_sample_part(s, "x.npy");
  ASSERT_FALSE(changed) << "the file changed since the record was read";
  EXPECT_EQ(changed.error().code(), errc::checksum_mismatch);
  EXPECT_NE(changed.error().message().find("case_00000_x.npy"), std::string::npos);
}

TEST(FileSlice, ADescriptorThatLiesIsRefused) {
  file_slice slice{"/etc/hostname", 10, 100, {1, 2, 50, 0}};
  auto bytes = encode_file_slice(slice);
  EXPECT_FALSE(decode_file_slice(bytes.data(), bytes.size())) << "a slice past the file's end";
  slice.size = 20;
  bytes = encode_file_slice(slice);
  auto decoded = decode_file_slice(bytes.data(), bytes.size());
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->path, "/etc/hostname");
  EXPECT_FALSE(open_file_slice(*decoded)) << "not the file described (inode, size, mtime)";
  bytes.pop_back();
  EXPECT_FALSE(decode_file_slice(bytes.data(), bytes.size())) << "a path cut short";
  EXPECT_FALSE(decode_file_slice(bytes.data(), 12)) << "a descriptor cut short";
  std::vector<std::uint8_t> npy = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  npy.resize(bytes.size());
  EXPECT_FALSE(decode_file_slice(npy.data(), npy.size())) << "no magic";
}

TEST(FileSlice, BytesThatLookLikeADescriptorAreData) {
  testing::temp_dir dir;
  const std::vector<std::uint8_t> secret = {'s', 'e', 'c', 'r', 'e', 't'};
  testing::write_file(dir / "secret", secret);
  const auto forged = testing::forged_slice_of(dir / "secret");
  auto s = sample_with_part(forged, false);

  auto part = open_sample_part(s, "x.npy");
  ASSERT_TRUE(part) << part.error().what();
  ASSERT_EQ(part->bytes->size(), forged.size()) << "the part's own bytes, not the file named";
  std::vector<std::uint8_t> got(forged.size());
  ASSERT_TRUE(part->bytes->read_at(0, got.data(), got.size()));
  EXPECT_EQ(got, forged);
  auto whole = find_sample_part(s, "x.npy");
  ASSERT_TRUE(whole) << "a part in the record, whatever its bytes: " << whole.error().what();
  EXPECT_EQ(whole->size, forged.size());
}

TEST(FileSlice, OnlyARegularFileOpensEvenThroughALink) {
  testing::temp_dir dir;
  const auto fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink(fifo, dir / "link-to-fifo");
  testing::write_file(dir / "data", {1, 2, 3});
  std::filesystem::create_symlink(dir / "data", dir / "link-to-data");

  // A FIFO's identity as a reader would have seen it: open() on it would block for a writer.
  for (const auto* name : {"fifo", "link-to-fifo"}) {
    auto s = sample_with_part(testing::forged_slice_of(dir / name), true);
    auto part = open_sample_part(s, "x.npy");
    ASSERT_FALSE(part) << name;
    EXPECT_EQ(part.error().code(), errc::io_error) << part.error().what();
    EXPECT_NE(part.error().message().find("not a regular file"), std::string::npos)
        << part.error().what();
    auto source = open_file_source(dir / name);
    ASSERT_FALSE(source) << name;
    EXPECT_NE(source.error().message().find("not a regular file"), std::string::npos);
  }
  auto s = sample_with_part(testing::forged_slice_of(dir / "link-to-data"), true);
  auto part = open_sample_part(s, "x.npy");
  ASSERT_TRUE(part) << "a link to a regular file: " << part.error().what();
  std::vector<std::uint8_t> got(3);
  ASSERT_TRUE(part->bytes->read_at(0, got.data(), got.size()));
  EXPECT_EQ(got, (std::vector<std::uint8_t>{1, 2, 3}));
}

}  // namespace
}  // namespace conveyor
