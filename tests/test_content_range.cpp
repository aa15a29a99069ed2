// A 206's Content-Range (core/remote/content_range.hpp): the forms a store sends, what a store
// that lies or breaks might send instead, and the comparison with the range a GET asked for.
#include <gtest/gtest.h>

#include "core/remote/content_range.hpp"

namespace conveyor {
namespace {

TEST(ContentRange, ARangeOfAKnownOrUnknownSizeParses) {
  auto known = parse_content_range("bytes 0-499/1234");
  ASSERT_TRUE(known);
  EXPECT_EQ(known->first, 0u);
  EXPECT_EQ(known->last, 499u);
  EXPECT_EQ(known->complete, std::optional<std::uint64_t>(1234));
  auto unknown = parse_content_range("  Bytes 500-999/*\r");
  ASSERT_FALSE(unknown) << "a carriage return is not a space";
  unknown = parse_content_range("  Bytes 500-999/* ");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->first, 500u);
  EXPECT_EQ(unknown->last, 999u);
  EXPECT_FALSE(unknown->complete);
  auto last_byte = parse_content_range(
      "bytes 18446744073709551614-18446744073709551614/"
      "18446744073709551615");
  ASSERT_TRUE(last_byte);
  EXPECT_EQ(last_byte->last, 18446744073709551614u);
}

TEST(ContentRange, AnythingElseIsNotOneRange) {
  for (const char* bad : {"", "bytes", "bytes ", "bytes */1234", "items 0-9/10", "bytes 0-9",
                          "bytes 9-0/10", "bytes 0-10/10", "bytes -1-9/10", "bytes 0-9/ten",
                          "bytes 0x0-9/10", "bytes 0-9/10, 20-29/30", "bytes 0-9/*/10",
                          "bytes 0-18446744073709551616/*", "bytes 0 - 9/10", "bytes0-9/10"}) {
    EXPECT_FALSE(parse_content_range(bad)) << bad;
  }
}

TEST(ContentRange, OnlyTheRangeAskedIsBelieved) {
  EXPECT_FALSE(content_range_mismatch(std::string_view("bytes 10-19/100"), 10, 10));
  EXPECT_FALSE(content_range_mismatch(std::string_view("bytes 10-19/*"), 10, 10));
  auto other = content_range_mismatch(std::string_view("bytes 0-9/100"), 10, 10);
  ASSERT_TRUE(other);
  EXPECT_EQ(*other, "asked for bytes=10-19, the answer is for bytes 0-9/100");
  auto longer = content_range_mismatch(std::string_view("bytes 10-29/100"), 10, 10);
  ASSERT_TRUE(longer);
  EXPECT_NE(longer->find("bytes 10-29/100"), std::string::npos) << *longer;
  auto none = content_range_mismatch(std::nullopt, 10, 10);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, "asked for bytes=10-19, the answer (HTTP 206) has no Content-Range");
  auto junk = content_range_mismatch(std::string_view("bytes */100"), 10, 10);
  ASSERT_TRUE(junk);
  EXPECT_NE(junk->find("\"bytes */100\" is not one range of bytes"), std::string::npos) << *junk;
  auto clipped = content_range_mismatch(std::string_view(std::string(5000, 'x')), 0, 1);
  ASSERT_TRUE(clipped);
  EXPECT_LT(clipped->size(), 200u) << "a store's header is clipped in a message";
}

}  // namespace
}  // namespace conveyor
