// Token vocabularies for transcripts (core/transforms/vocabulary.hpp): one token a line, ids
// by line, longest match, and errors that name the line or the character.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "core/transforms/vocabulary.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using ids = std::vector<std::int32_t>;

std::string written(const testing::temp_dir& dir, const std::string& text) {
  auto path = (dir / "vocabulary.txt").string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(Vocabulary, MLPerfCharactersGiveTheReferenceLabels) {
  // configs/baseline_v3-1023sp.yaml's labels: space, a-z, apostrophe.
  testing::temp_dir dir;
  std::string text = " \n";
  for (char c = 'a'; c <= 'z'; ++c) {
    text += std::string(1, c) + "\n";
  }
  text += "'\n";
  auto v = vocabulary::load(written(dir, text));
  ASSERT_TRUE(v) << v.error().what();
  EXPECT_EQ(v->size(), 28u);
  auto got = v->encode("  DON'T go\n", true);  // stripped and lowercased, as the manifest is
  ASSERT_TRUE(got) << got.error().what();
  EXPECT_EQ(*got, (ids{4, 15, 14, 27, 20, 0, 7, 15}));
}

TEST(Vocabulary, TheLongestTokenWins) {
  auto v = vocabulary::of({"a", "ab", "abc", "b", "c", "\xc3\xa9"});
  ASSERT_TRUE(v);
  EXPECT_EQ(*v->encode("abcab\xc3\xa9"
                       "cb",
                       false),
            (ids{2, 1, 5, 4, 3}));
}

TEST(Vocabulary, ACharacterNoTokenCoversIsNamed) {
  auto v = vocabulary::of({"a", "b"});
  ASSERT_TRUE(v);
  auto got = v->encode(
      "ab\xc3\xa9"
      "a",
      false);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), errc::invalid_argument);
  EXPECT_EQ(got.error().message(), "no token for '\xc3\xa9' (U+00E9) at byte 2");
  auto upper = v->encode(" aB", false);  // not lowercased: B is not a token
  ASSERT_FALSE(upper);
  EXPECT_EQ(upper.error().message(), "no token for 'B' (U+0042) at byte 2");
}

TEST(Vocabulary, BadFilesAreRefusedNamingTheLine) {
  testing::temp_dir dir;
  auto message = [&](const std::string& text) {
    auto v = vocabulary::load(written(dir, text));
    EXPECT_FALSE(v);
    return v ? std::string() : v.error().message();
  };
  const auto path = (dir / "vocabulary.txt").string();
  EXPECT_EQ(message("a\n\nb\n"), "vocabulary " + path +
                                     ": line 2 is empty (a space token is a line holding one "
                                     "space)");
  EXPECT_EQ(message("a\nb\na\n"), "vocabulary " + path + ": line 3 repeats line 1 ('a')");
  EXPECT_NE(message("a\n\xff\n").find("line 2 is not UTF-8"), std::string::npos);
  EXPECT_EQ(message(""), "vocabulary " + path + ": no tokens");
  auto missing = vocabulary::load((dir / "none.txt").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), errc::invalid_config);
  EXPECT_NE(missing.error().message().find("No such file"), std::string::npos);
  // "\r\n" ends a line too, and a last line without a newline is a token.
  auto crlf = vocabulary::load(written(dir, "a\r\nb"));
  ASSERT_TRUE(crlf);
  EXPECT_EQ(*crlf->encode("ba", false), (ids{1, 0}));
}

/// The message of `path`'s refusal (empty, and a failure, when it loads).
std::string refusal(const std::string& path) {
  auto v = vocabulary::load(path);
  EXPECT_FALSE(v) << path;
  if (v) {
    return {};
  }
  EXPECT_EQ(v.error().code(), errc::invalid_config);
  return v.error().message();
}

// Neither is read: /dev/zero would never end and a FIFO without a writer would block the open.
TEST(Vocabulary, WhatIsNotARegularFileIsRefusedFromItsTypeWithoutReadingIt) {
  EXPECT_EQ(refusal("/dev/zero"),
            "vocabulary /dev/zero: is a character device, not a regular file");
  testing::temp_dir dir;
  const auto fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(refusal(fifo), "vocabulary " + fifo + ": is a FIFO, not a regular file");
  EXPECT_EQ(refusal(dir.path().string()),
            "vocabulary " + dir.path().string() + ": is a directory, not a regular file");
}

TEST(Vocabulary, AFileOver64MiBIsRefusedFromItsSize) {
  testing::temp_dir dir;
  const auto path = written(dir, "a\n");
  std::filesystem::resize_file(path, (std::uintmax_t{64} << 20) + 1);  // sparse: nothing written
  EXPECT_EQ(refusal(path), "vocabulary " + path + ": over 67108864 bytes");
}

}  // namespace
}  // namespace conveyor
