// Parts left in their files (dataset.map_parts): a record holds a descriptor, a step reads the
// bytes in place; a file replaced or rewritten since the read is refused naming it, a
// descriptor that lies is refused, and the steps that decode whole parts refuse a descriptor.
#include <gtest/gtest.h>

#include "core/storage/file_slice.hpp"
#include "core/storage/part_files.hpp"
#include "core/storage/record_parts.hpp"
#include "core/transforms/sample_parts.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

sample_state sample_of(record r) {
  sample_state s;
  s.key = r.key;
  s.encoded = std::move(r.payload);
  s.multipart = r.multipart;
  return s;
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
  ASSERT_TRUE(is_file_slice(bytes.data(), bytes.size()));
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
  const std::uint8_t npy[] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  EXPECT_FALSE(is_file_slice(npy, sizeof npy));
}

}  // namespace
}  // namespace conveyor
