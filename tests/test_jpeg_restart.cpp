// Restart-indexed JPEGs (core/codecs/jpeg_restart.hpp, restart_index.hpp): the rewrite keeps the
// pixels for every chroma subsampling; region decodes that start at the crop's MCU row give the
// same bytes as those that start at the top, and never read the rows above; JPEGs that cannot be
// rewritten are kept with the reason; a damaged index is ignored, never trusted.
#include <gtest/gtest.h>

#include <random>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/jpeg_region.hpp"
#include "core/codecs/jpeg_restart.hpp"
#include "core/codecs/restart_index.hpp"
#include "support/jpeg_fixtures.hpp"

namespace conveyor {
namespace {

using namespace test;

std::vector<std::uint8_t> rewritten(const std::vector<std::uint8_t>& jpeg) {
  auto r = add_restart_index(jpeg.data(), jpeg.size());
  EXPECT_TRUE(r.jpeg) << r.kept_because;
  return r.jpeg ? *r.jpeg : std::vector<std::uint8_t>{};
}

cv::Mat region_of(const std::vector<std::uint8_t>& jpeg, int denom, image_region r) {
  auto part = decode_jpeg_region(jpeg.data(), jpeg.size(), at_scale(denom), r);
  EXPECT_TRUE(part) << part.error().what();
  EXPECT_TRUE(part && *part);
  return part && *part ? **part : cv::Mat();
}

bool same_bytes(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

TEST(RestartIndex, TheRewriteKeepsThePixelsOfEverySubsampling) {
  std::mt19937 rng(5);
  for (int sub : subsamplings) {
    const int w = 200 + static_cast<int>(rng() % 900);
    const int h = 200 + static_cast<int>(rng() % 900);
    auto jpeg = encode(photo(w, h, rng()), sub);
    auto indexed = rewritten(jpeg);
    auto index = find_restart_index(indexed.data(), indexed.size());
    ASSERT_TRUE(index) << "subsampling " << sub;
    EXPECT_EQ(index->rows,
              static_cast<std::uint32_t>((h + index->mcu_height - 1) / index->mcu_height));
    EXPECT_FALSE(find_restart_index(jpeg.data(), jpeg.size()));
    for (int denom : {1, 2, 8}) {
      auto before = decode_image(jpeg, at_scale(denom));
      auto after = decode_image(indexed, at_scale(denom));
      ASSERT_TRUE(before && after);
      EXPECT_TRUE(same_bytes(*before, *after)) << "subsampling " << sub << ", 1/" << denom;
    }
  }
}

TEST(RestartIndex, RegionsFromTheCropsRowAreTheSameBytesAsFromTheTop) {
  std::mt19937 rng(17);
  for (int sub : subsamplings) {
    const int w = 300 + static_cast<int>(rng() % 1200);
    const int h = 300 + static_cast<int>(rng() % 1200);
    auto jpeg = encode(photo(w, h, rng()), sub);
    auto indexed = rewritten(jpeg);
    for (int denom : {1, 2, 4, 8}) {
      auto full = decode_image(jpeg, at_scale(denom));
      ASSERT_TRUE(full);
      for (int trial = 0; trial < 10; ++trial) {
        const image_region r = test_region(rng, trial, full->cols, full->rows);
        cv::Mat expected = (*full)(cv::Rect(r.left, r.top, r.width, r.height));
        EXPECT_TRUE(same_bytes(region_of(indexed, denom, r), expected))
            << "subsampling " << sub << ", 1/" << denom << ", region " << r.width << "x" << r.height
            << " at " << r.left << "," << r.top;
      }
    }
  }
}

TEST(RestartIndex, TheRowsAboveTheCropAreNeverRead) {
  auto jpeg = encode(photo(640, 640, 3), TJSAMP_420);
  auto indexed = rewritten(jpeg);
  auto index = find_restart_index(indexed.data(), indexed.size());
  ASSERT_TRUE(index);
  // Garbage over the entropy data of MCU rows 0..9 (no FF: no marker appears).
  auto damaged = indexed;
  for (std::size_t i = index->entropy_begin; i < index->entropy_begin + index->offset(10); ++i) {
    damaged[i] = static_cast<std::uint8_t>((i * 37) % 0xFE);
  }
  EXPECT_FALSE(decode_image(damaged, at_scale(1)));  // strict: the whole image is damaged
  // A region from MCU row 12 on starts at row 11: the damage is never decoded.
  image_region r{100, 12 * 16, 300, 200};
  auto part = decode_jpeg_region(damaged.data(), damaged.size(), at_scale(1), r);
  ASSERT_TRUE(part) << part.error().what();
  ASSERT_TRUE(*part);
  EXPECT_TRUE(same_bytes(**part, region_of(jpeg, 1, r)));
}

TEST(RestartIndex, ProgressiveCorruptAndOtherFilesAreKeptWithTheReason) {
  auto image = photo(300, 200, 9);
  auto progressive = add_restart_index(encode(image, TJSAMP_420, TJFLAG_PROGRESSIVE).data(),
                                       encode(image, TJSAMP_420, TJFLAG_PROGRESSIVE).size());
  EXPECT_FALSE(progressive.jpeg);
  EXPECT_EQ(progressive.kept_because, "progressive");
  const std::vector<std::uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  auto other = add_restart_index(png.data(), png.size());
  EXPECT_FALSE(other.jpeg);
  EXPECT_EQ(other.kept_because, "not a JPEG");
  auto jpeg = encode(image, TJSAMP_420);
  auto truncated = add_restart_index(jpeg.data(), jpeg.size() / 2);
  EXPECT_FALSE(truncated.jpeg);
  EXPECT_NE(truncated.kept_because.find("libjpeg"), std::string::npos) << truncated.kept_because;
  // Rewriting twice gives one index, and the same pixels.
  auto once = rewritten(jpeg);
  auto twice = rewritten(once);
  EXPECT_EQ(twice.size(), once.size());
}

TEST(RestartIndex, ADamagedIndexIsIgnored) {
  auto jpeg = encode(photo(500, 700, 4), TJSAMP_420);
  auto indexed = rewritten(jpeg);
  auto index = find_restart_index(indexed.data(), indexed.size());
  ASSERT_TRUE(index);
  const auto at_offsets = static_cast<std::size_t>(index->offsets - indexed.data());
  image_region r{10, 300, 200, 100};  // starts at MCU row 17, row 18 holds it
  const cv::Mat expected = region_of(jpeg, 1, r);

  auto shifted = indexed;  // row 17's offset one byte late: no restart marker before it
  shifted[at_offsets + 4 * 17] = static_cast<std::uint8_t>(shifted[at_offsets + 4 * 17] + 1);
  ASSERT_TRUE(find_restart_index(shifted.data(), shifted.size()));
  EXPECT_FALSE(restart_marker_before(shifted.data(), shifted.size(),
                                     *find_restart_index(shifted.data(), shifted.size()), 17));
  EXPECT_TRUE(same_bytes(region_of(shifted, 1, r), expected));

  auto unordered = indexed;  // row 3's offset before row 2's: the index is not used at all
  for (int b = 0; b < 4; ++b) {
    unordered[at_offsets + 4 * 3 + b] = unordered[at_offsets + 4 * 1 + b];
  }
  EXPECT_FALSE(find_restart_index(unordered.data(), unordered.size()));
  EXPECT_TRUE(same_bytes(region_of(unordered, 1, r), expected));
}

}  // namespace
}  // namespace conveyor
