// Text parts: bytes kept as they are, and the UTF-8 check (as Python's bytes.decode decides).
#include <gtest/gtest.h>

#include <string>

#include "core/codecs/txt_decoder.hpp"

namespace conveyor {
namespace {

bool valid(const std::string& text) {
  return check_utf8(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()).has_value();
}

TEST(TxtDecoder, KeepsTheBytesAsTheyAre) {
  const std::string text = "\xef\xbb\xbfhello, w\xc3\xb6rld\r\n";
  auto array = decode_txt(text);
  ASSERT_TRUE(array) << array.error().what();
  EXPECT_EQ(describe(*array), "uint8 [" + std::to_string(text.size()) + "]");
  EXPECT_EQ(std::string(array->bytes.begin(), array->bytes.end()), text);
  auto empty = decode_txt("");
  ASSERT_TRUE(empty);
  EXPECT_EQ(describe(*empty), "uint8 [0]");
}

TEST(TxtDecoder, AcceptsWellFormedUtf8) {
  EXPECT_TRUE(valid(""));
  EXPECT_TRUE(valid("plain ASCII"));
  EXPECT_TRUE(valid("\xc2\x80 \xdf\xbf"));                       // two bytes, lowest and highest
  EXPECT_TRUE(valid("\xe0\xa0\x80 \xed\x9f\xbf \xee\x80\x80"));  // three, around surrogates
  EXPECT_TRUE(valid("\xf0\x90\x80\x80 \xf4\x8f\xbf\xbf"));       // four, up to U+10FFFF
  EXPECT_TRUE(valid(std::string("nul \0 inside", 12)));
}

TEST(TxtDecoder, RefusesWhatPythonRefuses) {
  EXPECT_FALSE(valid("\x80"));                  // a lone continuation byte
  EXPECT_FALSE(valid("\xc3"));                  // a cut sequence
  EXPECT_FALSE(valid("\xc0\xaf"));              // overlong '/'
  EXPECT_FALSE(valid("\xe0\x80\xaf"));          // overlong, three bytes
  EXPECT_FALSE(valid("\xed\xa0\x80"));          // a surrogate, U+D800
  EXPECT_FALSE(valid("\xf4\x90\x80\x80"));      // past U+10FFFF
  EXPECT_FALSE(valid("\xff"));                  // never in UTF-8
  EXPECT_FALSE(valid("latin-1 caf\xe9 text"));  // what a Latin-1 transcript looks like
}

TEST(TxtDecoder, NamesTheOffsetOfTheFirstBadByte) {
  auto array = decode_txt("caf\xc3\xa9 caf\xe9");
  ASSERT_FALSE(array);
  EXPECT_EQ(array.error().code(), errc::decode_error);
  EXPECT_EQ(array.error().message(), "txt: not UTF-8: the sequence at byte 9 of 10 is malformed");
  EXPECT_TRUE(decode_txt("caf\xe9", false));
}

}  // namespace
}  // namespace conveyor
