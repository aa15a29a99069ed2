// Class label parts: decimal integers as WebDataset's int(data) reads them, and nothing else.
#include <gtest/gtest.h>

#include <string>

#include "core/codecs/cls_decoder.hpp"

namespace conveyor {
namespace {

std::int32_t label(const std::string& text) {
  auto value = decode_cls(text);
  EXPECT_TRUE(value) << "'" << text << "': " << value.error().what();
  if (!value) {
    return -1;
  }
  EXPECT_EQ(describe(*value), "int32 []");
  return *value->data<std::int32_t>();
}

void expect_refused(const std::string& text, const std::string& why) {
  auto value = decode_cls(text);
  ASSERT_FALSE(value) << "'" << text << "' read as " << *value->data<std::int32_t>();
  EXPECT_EQ(value.error().code(), errc::decode_error);
  EXPECT_NE(value.error().message().find(why), std::string::npos) << value.error().message();
}

TEST(ClsDecoder, ReadsDecimalIntegersWithSurroundingWhitespace) {
  EXPECT_EQ(label("7"), 7);
  EXPECT_EQ(label("0"), 0);
  EXPECT_EQ(label(" 42\n"), 42);
  EXPECT_EQ(label("\t-3\r\n"), -3);
  EXPECT_EQ(label("+15"), 15);
  EXPECT_EQ(label("007"), 7);
  EXPECT_EQ(label("2147483647"), 2147483647);
  EXPECT_EQ(label("-2147483648"), -2147483647 - 1);
}

TEST(ClsDecoder, RefusesAnythingElseNamingIt) {
  expect_refused("", "no integer in ''");
  expect_refused(" \n", "no integer");
  expect_refused("2147483648", "outside int32");
  expect_refused("-2147483649", "outside int32");
  expect_refused("7 8", "'7 8' is not a decimal integer");
  expect_refused("1_000", "not a decimal integer");
  expect_refused("3.0", "not a decimal integer");
  expect_refused("0x10", "not a decimal integer");
  expect_refused("+-5", "not a decimal integer");
  expect_refused("-", "not a decimal integer");
  expect_refused("+", "not a decimal integer");
  expect_refused("cat", "'cat' is not a decimal integer");
  expect_refused(std::string("5\0", 2), "'5?' is not a decimal integer");
  expect_refused("\xd9\xa3", "not a decimal integer");  // ARABIC-INDIC DIGIT THREE
}

}  // namespace
}  // namespace conveyor
