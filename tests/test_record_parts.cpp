// The part container of multipart records (core/storage/record_parts.hpp): round trips, the
// names of single-part records, find_part's rule, cls labels, and every way a container can
// lie, each an error naming the record, never a read out of bounds.
#include <gtest/gtest.h>

#include <string>

#include "core/base/little_endian.hpp"
#include "core/storage/record_parts.hpp"

namespace conveyor {
namespace {

using bytes = std::vector<std::uint8_t>;
using named = std::vector<std::pair<std::string, bytes>>;

bytes text(const std::string& s) {
  return bytes(s.begin(), s.end());
}

bytes operator+(bytes a, const bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

record multipart(const named& parts, std::string key = "s/000") {
  return record{std::move(key), 0, encode_parts(parts), true};
}

bytes part_bytes(const part_view& p) {
  return bytes(p.data, p.data + p.size);
}

// The error parts_of gives for `payload`, which must name the key and contain `needle`.
void expect_refused(const bytes& payload, const std::string& needle) {
  record r{"shard-3/key-77", 0, payload, true};
  auto parts = parts_of(r);
  ASSERT_FALSE(parts) << "accepted a container that should be refused for: " << needle;
  EXPECT_EQ(parts.error().code(), errc::corrupt_shard);
  EXPECT_NE(parts.error().message().find("shard-3/key-77"), std::string::npos)
      << parts.error().message();
  EXPECT_NE(parts.error().message().find(needle), std::string::npos) << parts.error().message();
}

TEST(RecordParts, RoundTripKeepsNamesOrderAndBytes) {
  const named parts{{"jpg", text("jpeg bytes")},
                    {"cls", text("3")},
                    {"x.npy", bytes(1000, 7)},
                    {"empty", {}},
                    {std::string(255, 'n'), text("longest name")}};
  auto r = multipart(parts);
  auto got = parts_of(r);
  ASSERT_TRUE(got) << got.error().what();
  ASSERT_EQ(got->size(), parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ((*got)[i].name, parts[i].first);
    EXPECT_EQ(part_bytes((*got)[i]), parts[i].second);
  }
}

TEST(RecordParts, TheTableIsWhatEncodePartsStartsWith) {
  const named parts{{"a", text("xyz")}, {"b.c", text("")}};
  auto table = encode_part_table({{"a", 3}, {"b.c", 0}});
  auto whole = encode_parts(parts);
  ASSERT_EQ(whole.size(), table.size() + 3);
  EXPECT_TRUE(std::equal(table.begin(), table.end(), whole.begin()));
  // u32 count | u16 1 "a" u64 3 | u16 3 "b.c" u64 0 | "xyz"
  EXPECT_EQ(table.size(), 4u + (2 + 1 + 8) + (2 + 3 + 8));
  EXPECT_EQ(little_endian::load<std::uint32_t>(whole.data()), 2u);
}

TEST(RecordParts, AContainerOfNoPartsIsEmpty) {
  auto got = parts_of(multipart({}));
  ASSERT_TRUE(got) << got.error().what();
  EXPECT_TRUE(got->empty());
}

TEST(RecordParts, ASinglePartRecordIsNamedByItsKeysExtension) {
  EXPECT_EQ(single_part_name("a/b.JPEG"), "jpeg");
  EXPECT_EQ(single_part_name("class_1/img_7.jpg"), "jpg");
  EXPECT_EQ(single_part_name("x.tar.gz"), "gz");
  EXPECT_EQ(single_part_name("dir.d/file"), "bin");
  EXPECT_EQ(single_part_name("img_3"), "bin");
  EXPECT_EQ(single_part_name("trailing."), "bin");
  EXPECT_EQ(single_part_name(""), "bin");

  record folder{"cats/Tom.PNG", 1, text("png bytes"), false};
  auto parts = parts_of(folder);
  ASSERT_TRUE(parts) << parts.error().what();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].name, "png");
  EXPECT_EQ((*parts)[0].data, folder.payload.data());
  EXPECT_EQ((*parts)[0].size, folder.payload.size());

  record plain{"img_1", 0, text("?"), false};
  EXPECT_EQ((*parts_of(plain))[0].name, "bin");
  for (const char* key : {"x/y.TIFF", "x/y.tiff", "x/z.TiFf"}) {
    record r{key, 0, text("t"), false};
    EXPECT_EQ((*parts_of(r))[0].name, "tiff") << key;
  }
}

TEST(RecordParts, FindPartTakesTheFirstAlternativeThatNamesAPartExactly) {
  auto r = multipart({{"jpeg", text("j")},
                      {"x.npy", text("x")},
                      {"y.npy", text("y")},
                      {"cls", text("1")},
                      {"png", text("p")}});
  auto parts = *parts_of(r);
  EXPECT_EQ(find_part(parts, "jpg;jpeg;png")->name, "jpeg");  // preference order, not part order
  EXPECT_EQ(find_part(parts, "png;jpeg")->name, "png");
  EXPECT_EQ(find_part(parts, "x.npy")->name, "x.npy");
  EXPECT_EQ(find_part(parts, "y.npy")->name, "y.npy");
  EXPECT_EQ(find_part(parts, ";;cls;")->name, "cls");
  EXPECT_EQ(find_part(parts, "npy"), nullptr) << "names are whole: npy is not x.npy";
  EXPECT_EQ(find_part(parts, "JPEG"), nullptr) << "names are compared as they are";
  EXPECT_EQ(find_part(parts, "x"), nullptr);
  EXPECT_EQ(find_part(parts, ""), nullptr);
  EXPECT_EQ(find_part(parts, "wav;flac"), nullptr);

  record folder{"a/b.JPEG", 0, text("j"), false};
  auto single = *parts_of(folder);
  EXPECT_EQ(find_part(single, "jpg;jpeg"), &single[0]);
}

TEST(RecordParts, TheLabelIsTheIntegerOfTheClsPart) {
  auto label = [](const std::string& cls) {
    auto r = multipart({{"jpg", text("j")}, {"cls", text(cls)}});
    return label_of_parts(*parts_of(r));
  };
  EXPECT_EQ(label("3"), 3);
  EXPECT_EQ(label("  42\n"), 42);
  EXPECT_EQ(label("-7"), -7);
  EXPECT_EQ(label("+5"), 5);
  EXPECT_EQ(label("2147483647"), 2147483647);
  EXPECT_EQ(label("-2147483648"), -2147483647 - 1);
  EXPECT_EQ(label("2147483648"), 0) << "out of int32";
  EXPECT_EQ(label("99999999999"), 0);
  EXPECT_EQ(label("cat"), 0);
  EXPECT_EQ(label("1 2"), 0);
  EXPECT_EQ(label("3.0"), 0);
  EXPECT_EQ(label(""), 0);
  EXPECT_EQ(label("-"), 0);
  EXPECT_EQ(label_of_parts(*parts_of(multipart({{"jpg", text("j")}}))), 0) << "no cls part";
}

TEST(RecordParts, PartNamesAreOneTo255BytesOfASmallAlphabet) {
  EXPECT_TRUE(is_part_name("jpg"));
  EXPECT_TRUE(is_part_name("seg.PNG"));
  EXPECT_TRUE(is_part_name("a_b-c.1"));
  EXPECT_TRUE(is_part_name(std::string(255, 'a')));
  EXPECT_FALSE(is_part_name(""));
  EXPECT_FALSE(is_part_name(std::string(256, 'a')));
  for (const char* bad : {"a b", "a/b", "a;b", "\xc3\xa4", "a\nb", "*"}) {
    EXPECT_FALSE(is_part_name(bad)) << bad;
  }
  EXPECT_FALSE(is_part_name(std::string("a\0b", 3)));
  EXPECT_TRUE(check_part_names({"jpg", "cls"}, "k"));
  auto twice = check_part_names({"jpg", "cls", "jpg"}, "k9");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message().find("k9"), std::string::npos);
  EXPECT_NE(twice.error().message().find("\"jpg\""), std::string::npos);
  auto bad = check_part_names({"jpg", "a b"}, "k9");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("\"a b\""), std::string::npos);
}

// A container for {"jpg": 5 bytes, "cls": 1 byte}, written by hand so each field can lie.
struct hand_container {
  std::uint32_t count = 2;
  std::uint16_t name0_size = 3;
  std::string name0 = "jpg";
  std::uint64_t size0 = 5;
  std::uint16_t name1_size = 3;
  std::string name1 = "cls";
  std::uint64_t size1 = 1;
  bytes data = text("JJJJJ1");

  bytes encode() const {
    bytes out(4);
    little_endian::store(out.data(), count);
    auto put_entry = [&](std::uint16_t name_size, const std::string& name, std::uint64_t size) {
      bytes field(2);
      little_endian::store(field.data(), name_size);
      out.insert(out.end(), field.begin(), field.end());
      out.insert(out.end(), name.begin(), name.end());
      bytes size_field(8);
      little_endian::store(size_field.data(), size);
      out.insert(out.end(), size_field.begin(), size_field.end());
    };
    put_entry(name0_size, name0, size0);
    put_entry(name1_size, name1, size1);
    out.insert(out.end(), data.begin(), data.end());
    return out;
  }
};

TEST(RecordParts, TheHandWrittenContainerParses) {
  record r{"k", 0, hand_container{}.encode(), true};
  auto parts = parts_of(r);
  ASSERT_TRUE(parts) << parts.error().what();
  EXPECT_EQ(part_bytes((*parts)[0]), text("JJJJJ"));
  EXPECT_EQ(part_bytes((*parts)[1]), text("1"));
  EXPECT_EQ(label_of_parts(*parts), 1);
}

TEST(RecordParts, EveryLyingLengthIsRefusedNamingTheRecord) {
  hand_container c;
  c.count = 3;  // a third entry would be read from the data
  expect_refused(c.encode(), "3 parts cannot fit in 36 bytes");
  c.data = text("JJJJJ1") + text(std::string(6, '\0'));  // room for a table entry, but no
  expect_refused(c.encode(), "part 2 of 3");
  c = {};
  c.count = 0xffffffff;
  expect_refused(c.encode(), "cannot fit");
  c = {};
  c.name0_size = 4;  // takes a byte of the size field
  auto shifted = c.encode();
  expect_refused(shifted, "part");
  c = {};
  c.name1_size = 0xffff;
  expect_refused(c.encode(), "run past the end");
  c = {};
  c.size0 = 6;  // the parts' sizes add up to more than the data
  expect_refused(c.encode(), "runs past the end");
  c = {};
  c.size1 = ~std::uint64_t{0};  // would overflow a sum
  expect_refused(c.encode(), "claims");
  c = {};
  c.size0 = ~std::uint64_t{0} - 3;
  c.size1 = 10;
  expect_refused(c.encode(), "claims");
  c = {};
  c.size0 = 4;  // a byte left over after the last part
  expect_refused(c.encode(), "follow the last part");
  expect_refused({}, "too short");
  expect_refused({1, 0}, "too short");
  expect_refused({1, 0, 0, 0}, "cannot fit");
  // Every truncation of a good container is refused.
  auto good = hand_container{}.encode();
  for (std::size_t n = 0; n < good.size(); ++n) {
    record r{"cut", 0, bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)), true};
    EXPECT_FALSE(parts_of(r)) << "cut to " << n << " bytes";
  }
}

TEST(RecordParts, BadAndDuplicateNamesInAContainerAreRefused) {
  hand_container c;
  c.name1 = "jpg";
  expect_refused(c.encode(), "\"jpg\" is there twice");
  c = {};
  c.name0 = "a/b";
  expect_refused(c.encode(), "is not 1..255 bytes");
  c = {};
  c.name0_size = 0;
  c.name0 = "";
  expect_refused(c.encode(), "is not 1..255 bytes");
  c = {};
  c.name0_size = 256;
  c.name0 = std::string(256, 'a');
  expect_refused(c.encode(), "is not 1..255 bytes");
  // encode_parts with a bad name makes a container that does not parse.
  expect_refused(encode_parts({{"a b", text("x")}}), "is not 1..255 bytes");
  expect_refused(encode_parts({{"jpg", text("x")}, {"jpg", text("y")}}), "twice");
}

}  // namespace
}  // namespace conveyor
