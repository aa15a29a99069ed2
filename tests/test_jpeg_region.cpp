// Decoding only a region of a JPEG (core/codecs/jpeg_region.hpp) and the decode step that uses
// it: the same bytes as the whole scaled decode for every chroma subsampling, at every scale,
// for random regions and regions touching every edge; the chain's output the same with and
// without it; progressive and CMYK JPEGs fall back; damage is an error, never a crash.
#include <gtest/gtest.h>

#include <random>

#include <turbojpeg.h>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/jpeg_region.hpp"
#include "core/transforms/transform_chain.hpp"
#include "support/jpeg_fixtures.hpp"
#include "support/step_harness.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using namespace test;

TEST(JpegRegion, TheSameBytesAsTheWholeScaledDecodeForEverySubsampling) {
  std::mt19937 rng(11);
  for (int sub : subsamplings) {
    const int w = 300 + static_cast<int>(rng() % 1200);
    const int h = 300 + static_cast<int>(rng() % 1200);
    auto jpeg = encode(photo(w, h, rng()), sub);
    for (int denom : {1, 2, 4, 8}) {
      auto full = decode_image(jpeg, at_scale(denom));
      ASSERT_TRUE(full) << full.error().what();
      for (int trial = 0; trial < 8; ++trial) {
        const image_region r = test_region(rng, trial, full->cols, full->rows);
        auto part = decode_jpeg_region(jpeg.data(), jpeg.size(), at_scale(denom), r);
        ASSERT_TRUE(part) << part.error().what();
        ASSERT_TRUE(*part);
        EXPECT_EQ(
            cv::norm(**part, (*full)(cv::Rect(r.left, r.top, r.width, r.height)), cv::NORM_INF), 0)
            << "subsampling " << sub << " 1/" << denom << " region " << r.width << "x" << r.height
            << " at " << r.left << "," << r.top << " of " << full->cols << "x" << full->rows;
      }
    }
  }
}

TEST(JpegRegion, ProgressiveJpegsFallBackAndBadRegionsAreRefused) {
  auto progressive = encode(photo(640, 480, 3), TJSAMP_420, TJFLAG_PROGRESSIVE);
  auto none =
      decode_jpeg_region(progressive.data(), progressive.size(), at_scale(2), {0, 0, 10, 10});
  ASSERT_TRUE(none) << none.error().what();
  EXPECT_FALSE(*none);  // the caller decodes in full
  auto baseline = encode(photo(640, 480, 3), TJSAMP_420);
  auto outside =
      decode_jpeg_region(baseline.data(), baseline.size(), at_scale(2), {300, 0, 40, 10});
  ASSERT_FALSE(outside);  // 320 wide at 1/2
  EXPECT_EQ(outside.error().code(), errc::invalid_argument);
}

TEST(JpegRegion, DamageIsAnErrorNeverACrash) {
  auto jpeg = encode(photo(800, 600, 4), TJSAMP_420);
  auto truncated = std::vector<std::uint8_t>(jpeg.begin(), jpeg.begin() + jpeg.size() / 2);
  auto bottom = decode_jpeg_region(truncated.data(), truncated.size(), {}, {0, 500, 800, 100});
  ASSERT_FALSE(bottom);  // its rows are past the end of the data
  EXPECT_EQ(bottom.error().code(), errc::decode_error);
  auto top = decode_jpeg_region(truncated.data(), truncated.size(), {}, {0, 0, 800, 50});
  ASSERT_TRUE(top) << top.error().what();  // the damage lies below: never read
  auto garbage = std::vector<std::uint8_t>{0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3};
  auto none = decode_jpeg_region(garbage.data(), garbage.size(), {}, {0, 0, 1, 1});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::decode_error);
  std::mt19937 rng(9);
  for (int i = 0; i < 200; ++i) {  // flipped bytes anywhere: an error or pixels, never a crash
    auto damaged = jpeg;
    damaged[rng() % damaged.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    (void)decode_jpeg_region(damaged.data(), damaged.size(), at_scale(2), {50, 50, 100, 100});
  }
}

// The recipe's crop, chained after a decode with and without region decodes.
std::vector<std::uint8_t> crop_output(const std::vector<std::uint8_t>& jpeg, std::uint64_t id,
                                      bool roi, interpolation interp) {
  decode_spec decode;
  decode.roi = roi;
  random_resized_crop_spec crop;
  crop.height = crop.width = 224;
  crop.interp = interp;
  auto chain = transform_chain::build({decode, crop, to_uint8_spec{}});
  EXPECT_TRUE(chain);
  auto s = testing::sample_with_bytes(jpeg);
  s.sample_id = id;
  s.epoch_seed = 77;
  auto ok = chain->run_all(s);
  EXPECT_TRUE(ok) << ok.error().what();
  return {testing::array_of(s).bytes.begin(), testing::array_of(s).bytes.end()};
}

TEST(JpegRegion, TheChainGivesTheSameOutputWithAndWithoutRegionDecodes) {
  std::mt19937 rng(5);
  for (int sub : subsamplings) {
    auto jpeg = encode(
        photo(400 + static_cast<int>(rng() % 2600), 400 + static_cast<int>(rng() % 2600), rng()),
        sub);
    for (std::uint64_t id = 0; id < 6; ++id) {
      for (auto interp : {interpolation::bilinear, interpolation::opencv_bilinear}) {
        EXPECT_EQ(crop_output(jpeg, id, true, interp), crop_output(jpeg, id, false, interp))
            << "subsampling " << sub << " sample " << id;
      }
    }
  }
}

}  // namespace
}  // namespace conveyor
