// Which decoder a WebDataset part takes, by its extension.
#include <gtest/gtest.h>

#include <string>

#include "core/codecs/part_kind.hpp"

namespace conveyor {
namespace {

std::string kind(const std::string& name) {
  auto k = decoder_for_extension(name);
  return k ? std::string(name_of(*k)) : k.error().message();
}

TEST(PartKind, ExtensionsWebDatasetUsesPickTheirDecoder) {
  EXPECT_EQ(kind("jpg"), "jpeg");
  EXPECT_EQ(kind("jpeg"), "jpeg");
  EXPECT_EQ(kind("png"), "png");
  EXPECT_EQ(kind("npy"), "npy");
  for (const char* audio : {"wav", "flac", "ogg", "opus", "mp3"}) {
    EXPECT_EQ(kind(audio), "audio") << audio;
  }
  for (const char* cls : {"cls", "cls2", "index", "inx", "id"}) {
    EXPECT_EQ(kind(cls), "cls") << cls;
  }
  for (const char* txt : {"txt", "text", "transcript"}) {
    EXPECT_EQ(kind(txt), "txt") << txt;
  }
  EXPECT_EQ(kind("json"), "json");
  EXPECT_EQ(kind("jsn"), "json");
}

TEST(PartKind, TheLastComponentDecidesIgnoringCase) {
  EXPECT_EQ(kind("x.npy"), "npy");
  EXPECT_EQ(kind("seg.png"), "png");
  EXPECT_EQ(kind("left.JPG"), "jpeg");
  EXPECT_EQ(kind("a.b.FLAC"), "audio");
}

TEST(PartKind, UnknownExtensionsAreNamed) {
  auto k = decoder_for_extension("x.pth");
  ASSERT_FALSE(k);
  EXPECT_EQ(k.error().code(), errc::not_found);
  EXPECT_EQ(k.error().message(), "no decoder for part 'x.pth' (extension 'pth')");
  EXPECT_FALSE(decoder_for_extension(""));
  EXPECT_FALSE(decoder_for_extension("npy."));
  EXPECT_FALSE(decoder_for_extension("gz"));
}

}  // namespace
}  // namespace conveyor
