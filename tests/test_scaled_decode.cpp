// Crop-aware scaled decode: decode directly followed by random_resized_crop draws the crop's box
// from the JPEG header and decodes at the smallest M/8 scale that keeps the box at least the
// output size. The box is the one the crop step would draw on the full image; the output has
// the same shape, stays close to the full decode (PSNR), is deterministic, and scaled = false
// (or a PNG, or an image too small to reduce) gives exactly the full-decode result.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/transforms/antialiased_resize.hpp"
#include "core/transforms/crop_geometry.hpp"
#include "core/transforms/transform_chain.hpp"
#include "support/step_harness.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

constexpr scale_ratio one{1, 1};
constexpr scale_ratio half{1, 2};
constexpr scale_ratio quarter{1, 4};
constexpr scale_ratio three_eighths{3, 8};
constexpr scale_ratio eighth{1, 8};

/// Photo-like content: smooth colour fields (low-resolution random colours, upscaled), the
/// kind of detail most of a photo is made of, without the hard edges of make_jpeg.
std::vector<std::uint8_t> smooth_jpeg(int width, int height, std::uint64_t seed) {
  cv::RNG rng(seed);
  cv::Mat coarse(height / 64 + 2, width / 64 + 2, CV_8UC3);
  rng.fill(coarse, cv::RNG::UNIFORM, 0, 256);
  cv::Mat image;
  cv::resize(coarse, image, cv::Size(width, height), 0, 0, cv::INTER_CUBIC);
  std::vector<std::uint8_t> out;
  cv::imencode(".jpg", image, out, {cv::IMWRITE_JPEG_QUALITY, 90});
  return out;
}

std::vector<std::uint8_t> as_png(const std::vector<std::uint8_t>& jpeg) {
  cv::Mat image = cv::imdecode(jpeg, cv::IMREAD_COLOR);
  std::vector<std::uint8_t> out;
  cv::imencode(".png", image, out);
  return out;
}

random_resized_crop_spec crop_spec(int size, std::array<double, 2> scale,
                                   std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0}) {
  random_resized_crop_spec crop;
  crop.height = size;
  crop.width = size;
  crop.params.scale = scale;
  crop.params.ratio = ratio;
  return crop;
}

/// decode -> random_resized_crop -> to_uint8.
transform_chain crop_chain(bool scaled, const random_resized_crop_spec& crop) {
  decode_spec decode;
  decode.scaled = scaled;
  auto chain = transform_chain::build({decode, crop, to_uint8_spec{}});
  EXPECT_TRUE(chain) << chain.error().what();
  return std::move(*chain);
}

sample_state make_sample(std::uint64_t id, std::vector<std::uint8_t> bytes) {
  auto s = testing::sample_with_bytes({});
  s.sample_id = id;
  s.key = "img_" + std::to_string(id) + ".jpg";
  s.epoch_seed = 2024;
  s.encoded = std::move(bytes);
  return s;
}

void run_next(const transform_chain& chain, sample_state& s) {
  auto ok = chain.run_next(s);
  ASSERT_TRUE(ok) << ok.error().what();
}

/// The sample after the decode and crop steps (the image, before to_uint8).
sample_state cropped(const transform_chain& chain, sample_state s) {
  run_next(chain, s);
  run_next(chain, s);
  return s;
}

std::vector<std::uint8_t> output_bytes(const transform_chain& chain, sample_state s) {
  auto ok = chain.run_all(s);
  EXPECT_TRUE(ok) << ok.error().what();
  return {testing::array_of(s).bytes.begin(), testing::array_of(s).bytes.end()};
}

bool same_pixels(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

// ---- geometry -----------------------------------------------------------------------------

TEST(ScaledDecode, TurboJpegOffersEveryEighthSmallestFirst) {
  const auto& scales = jpeg_reduction_scales();
  ASSERT_FALSE(scales.empty());
  EXPECT_EQ(scales.front(), eighth);
  EXPECT_EQ(scales.back(), one);
  EXPECT_TRUE(std::is_sorted(scales.begin(), scales.end(), smaller_scale));
  for (auto scale : {quarter, three_eighths, half}) {
    EXPECT_NE(std::find(scales.begin(), scales.end(), scale), scales.end());
  }
}

TEST(ScaledDecode, OnlyTheDedicatedReductionsAreUsed) {
  // 3/8 .. 7/8 decode no faster than 1/1 (bench/results/scaled_decode.md).
  EXPECT_EQ(jpeg_fast_reduction_scales(), (std::vector<scale_ratio>{eighth, quarter, half, one}));
  // So an 800x700 crop, for which 3/8 would do, is decoded at 1/2.
  EXPECT_EQ(smallest_scale_for_crop({0, 0, 800, 700}, {224, 224}, jpeg_fast_reduction_scales()),
            half);
}

TEST(ScaledDecode, OutputPixelsSampleTheReducedImageWhereTheFullResizeSamples) {
  const crop_box box{101, 37, 1200, 1000};
  const image_extent out{224, 200};
  // At 1/1, cv::resize's own map: src = (dst + 0.5) * box / out - 0.5 + box offset.
  crop_mapping at_one = scaled_crop_mapping(box, out, one);
  EXPECT_DOUBLE_EQ(at_one.x.step, 1200.0 / 224);
  EXPECT_DOUBLE_EQ(at_one.x.offset, 101 + 0.5 * 1200.0 / 224 - 0.5);
  EXPECT_DOUBLE_EQ(at_one.y.step, 5.0);
  EXPECT_DOUBLE_EQ(at_one.y.offset, 37 + 2.5 - 0.5);
  // At 1/4, source position u is decoded position (u + 0.5) / 4 - 0.5: for every output pixel.
  crop_mapping at_quarter = scaled_crop_mapping(box, out, quarter);
  for (int dst : {0, 1, 100, 199}) {
    double source_y = dst * at_one.y.step + at_one.y.offset;
    EXPECT_NEAR(dst * at_quarter.y.step + at_quarter.y.offset, (source_y + 0.5) / 4 - 0.5, 1e-9);
  }
  // The box of a whole 3001x2001 image at 1/8 (decoded 376x251) stays inside the image.
  crop_mapping whole = scaled_crop_mapping({0, 0, 3001, 2001}, {224, 224}, eighth);
  EXPECT_GE(whole.x.offset, 0.0);
  EXPECT_GE(whole.y.offset, 0.0);
  EXPECT_LE(223 * whole.x.step + whole.x.offset, 376 - 1);
  EXPECT_LE(223 * whole.y.step + whole.y.offset, 251 - 1);
}

TEST(ScaledDecode, SmallestScaleKeepsTheCropAtLeastTheOutputSize) {
  const auto& scales = jpeg_reduction_scales();
  const image_extent out{224, 224};
  // The whole of a 3000x2000 image: 1/8 leaves 375x250.
  EXPECT_EQ(smallest_scale_for_crop({0, 0, 3000, 2000}, out, scales), eighth);
  // A 1500x1000 crop: 1/8 would leave 187.5x125, 1/4 leaves 375x250.
  EXPECT_EQ(smallest_scale_for_crop({700, 500, 1500, 1000}, out, scales), quarter);
  // 800x700: 1/4 leaves 200x175, 3/8 leaves 300x262.5.
  EXPECT_EQ(smallest_scale_for_crop({0, 0, 800, 700}, out, scales), three_eighths);
  // Exactly twice the output: 1/2; a pixel less: 1/1 among the fast scales.
  EXPECT_EQ(smallest_scale_for_crop({0, 0, 448, 448}, out, scales), half);
  EXPECT_EQ(smallest_scale_for_crop({0, 0, 448, 447}, out, jpeg_fast_reduction_scales()), one);
  // Smaller than the output already (the crop is resized up): no reduction.
  EXPECT_EQ(smallest_scale_for_crop({10, 20, 300, 200}, out, scales), one);
  // Only what the decoder offers is chosen.
  EXPECT_EQ(smallest_scale_for_crop({0, 0, 3000, 2000}, out, {half, one}), half);
}

// ---- the chain ----------------------------------------------------------------------------

TEST(ScaledDecode, LargeImageDecodesReducedAroundTheSameBox) {
  const auto jpeg = testing::make_jpeg(3000, 2000, 1);
  struct geometry {
    double area;  // fraction of the image; with the image's own 3:2 ratio the size is exact
    int width, height;
    scale_ratio scale;
  };
  for (const auto& g : {geometry{1.0, 3000, 2000, eighth}, geometry{0.25, 1500, 1000, quarter}}) {
    const auto crop = crop_spec(224, {g.area, g.area}, {1.5, 1.5});
    auto chain = crop_chain(true, crop);
    auto s = make_sample(7, jpeg);
    run_next(chain, s);
    ASSERT_TRUE(s.crop_plan);
    const planned_crop& plan = *s.crop_plan;
    EXPECT_EQ(plan.decode_scale, g.scale);
    EXPECT_EQ(plan.source.width, 3000);
    EXPECT_EQ(plan.source.height, 2000);
    EXPECT_EQ(plan.source_box.width, g.width);
    EXPECT_EQ(plan.source_box.height, g.height);
    // Only the part of the reduced image the box needs was decoded (a region decode).
    EXPECT_EQ(plan.decoded, decoded_region_of(plan.source_box, plan.source, plan.decode_scale));
    EXPECT_EQ(testing::image_of(s).size(), cv::Size(plan.decoded.width, plan.decoded.height));
    // The box is the one the crop step (step 1) draws from its own generator.
    auto crop_rng = step_rng(s, 1);
    EXPECT_EQ(plan.source_box, random_resized_crop_box(3000, 2000, crop.params, crop_rng));
    run_next(chain, s);
    EXPECT_FALSE(s.crop_plan);  // used up
    EXPECT_EQ(testing::image_of(s).size(), cv::Size(224, 224));
  }
}

TEST(ScaledDecode, PlannedBoxIsTheCropStepsOwnBoxForEverySample) {
  const auto jpeg = testing::make_jpeg(2400, 1800, 2);
  const auto crop = crop_spec(224, {0.08, 1.0});
  auto chain = crop_chain(true, crop);
  int reduced = 0;
  for (std::uint64_t id = 0; id < 40; ++id) {
    auto s = make_sample(id, jpeg);
    run_next(chain, s);
    ASSERT_TRUE(s.crop_plan);
    auto crop_rng = step_rng(s, 1);
    EXPECT_EQ(s.crop_plan->source_box, random_resized_crop_box(2400, 1800, crop.params, crop_rng));
    const scale_ratio scale = s.crop_plan->decode_scale;
    EXPECT_GE(s.crop_plan->source_box.width * scale.num, 224 * scale.denom);
    EXPECT_GE(s.crop_plan->source_box.height * scale.num, 224 * scale.denom);
    reduced += scale != one ? 1 : 0;
  }
  EXPECT_GT(reduced, 20);  // most crops of a 2400x1800 image need far less than all of it
}

TEST(ScaledDecode, OutputShapeIsTheFullDecodes) {
  auto recipe = imagenet_train_recipe();
  auto scaled = transform_chain::build(recipe);
  std::get<decode_spec>(recipe[0]).scaled = false;
  auto full = transform_chain::build(recipe);
  ASSERT_TRUE(scaled && full);
  std::uint64_t id = 0;
  for (auto [w, h] : {std::pair{3000, 2000}, {2048, 2900}, {640, 480}, {300, 500}}) {
    auto a = make_sample(id, testing::make_jpeg(w, h, id));
    auto b = a;
    ASSERT_TRUE(scaled->run_all(a));
    ASSERT_TRUE(full->run_all(b));
    EXPECT_EQ(testing::array_of(a).type, testing::array_of(b).type);
    EXPECT_EQ(testing::array_of(a).extent(0), testing::array_of(b).extent(0));
    EXPECT_EQ(testing::array_of(a).extent(1), testing::array_of(b).extent(1));
    EXPECT_EQ(testing::array_of(a).extent(2), testing::array_of(b).extent(2));
    EXPECT_EQ(testing::array_of(a).bytes.size(), testing::array_of(b).bytes.size());
    ++id;
  }
}

// Both paths sample the same positions of the same box; they differ in what they sample: the
// full path point-samples (bilinear, no averaging) a box of up to 3000 pixels, the scaled path
// an image the DCT scaling has low-pass filtered (averaged over 2-8 pixels). On smooth,
// photo-like content that difference is small: 48 dB on average here, 45 at worst. 40 dB (an RMS
// difference of 2.5/255, below what JPEG quality 90 itself costs) also catches a misplaced box:
// rounding the box to whole decoded pixels instead measured 35 dB at worst on these images.
TEST(ScaledDecode, CloseToTheFullDecodeOnPhotoLikeImages) {
  const auto crop = crop_spec(224, {0.08, 1.0});
  auto scaled = crop_chain(true, crop);
  auto full = crop_chain(false, crop);
  double min_psnr = 1e9;
  double sum_psnr = 0;
  int reduced = 0;
  const int count = 12;
  for (int i = 0; i < count; ++i) {
    int w = 1800 + (i * 467) % 1400;
    int h = 1800 + (i * 311) % 1400;
    auto sample = make_sample(static_cast<std::uint64_t>(i), smooth_jpeg(w, h, 100 + i));
    sample_state with = sample;
    run_next(scaled, with);
    reduced += with.crop_plan && with.crop_plan->decode_scale != one ? 1 : 0;
    run_next(scaled, with);
    sample_state without = cropped(full, sample);
    double psnr = cv::PSNR(testing::image_of(with), testing::image_of(without));
    min_psnr = std::min(min_psnr, psnr);
    sum_psnr += psnr;
  }
  std::cout << "PSNR scaled vs full decode over " << count << " images: mean " << sum_psnr / count
            << " dB, min " << min_psnr << " dB (" << reduced << " decoded reduced)\n";
  EXPECT_EQ(reduced, count);
  EXPECT_GE(min_psnr, 40.0);
}

TEST(ScaledDecode, SameSeedSameBytesWhereverTheChainPauses) {
  auto chain = transform_chain::build(imagenet_train_recipe());
  ASSERT_TRUE(chain);
  auto sample = make_sample(11, testing::make_jpeg(2600, 1900, 11));
  auto first = output_bytes(*chain, sample);
  EXPECT_EQ(output_bytes(*chain, sample), first);
  // Decode here, the rest "in another actor" from a moved copy.
  auto s = sample;
  run_next(*chain, s);
  sample_state moved = std::move(s);
  EXPECT_EQ(output_bytes(*chain, std::move(moved)), first);
  // Another epoch draws another crop.
  auto other = sample;
  other.epoch_seed = 2025;
  EXPECT_NE(output_bytes(*chain, other), first);
}

// Unscaled, the crop is its own draw on the full decode, resampled as PIL does (the default
// bilinear), or as OpenCV's cv::resize does with interpolation = "opencv_bilinear".
TEST(ScaledDecode, UnscaledIsTheFullDecodeAndTheCropsOwnDraw) {
  auto crop = crop_spec(224, {0.08, 1.0});
  const auto jpeg = testing::make_jpeg(2400, 1800, 3);
  auto full = decode_image(jpeg);
  ASSERT_TRUE(full);
  for (auto interp : {interpolation::bilinear, interpolation::opencv_bilinear}) {
    crop.interp = interp;
    auto chain = crop_chain(false, crop);
    for (std::uint64_t id = 0; id < 5; ++id) {
      auto s = make_sample(id, jpeg);
      run_next(chain, s);
      EXPECT_FALSE(s.crop_plan);
      EXPECT_TRUE(same_pixels(testing::image_of(s), *full));
      auto crop_rng = step_rng(s, 1);
      crop_box box = random_resized_crop_box(2400, 1800, crop.params, crop_rng);
      cv::Mat expected;
      if (interp == interpolation::opencv_bilinear) {
        cv::resize((*full)(cv::Rect(box.left, box.top, box.width, box.height)), expected,
                   cv::Size(224, 224), 0, 0, cv::INTER_LINEAR);
      } else {  // torchvision's resized_crop: the crop, then PIL's resize of it
        cv::Mat box_pixels = (*full)(cv::Rect(box.left, box.top, box.width, box.height));
        antialiased_resize(box_pixels, whole(box_pixels), cv::Size(224, 224),
                           resample_filter::bilinear, expected);
      }
      run_next(chain, s);
      EXPECT_TRUE(same_pixels(testing::image_of(s), expected)) << "sample " << id;
    }
  }
}

TEST(ScaledDecode, ImageTooSmallToReduceGivesExactlyTheFullDecodeResult) {
  const auto crop = crop_spec(224, {0.08, 1.0});
  auto scaled = crop_chain(true, crop);
  auto full = crop_chain(false, crop);
  for (std::uint64_t id = 0; id < 8; ++id) {
    auto s = make_sample(id, testing::make_jpeg(300, 250, id));
    auto with = s;
    run_next(scaled, with);
    ASSERT_TRUE(with.crop_plan);
    EXPECT_EQ(with.crop_plan->decode_scale, one);
    EXPECT_EQ(output_bytes(scaled, s), output_bytes(full, s)) << "sample " << id;
  }
}

TEST(ScaledDecode, PngTakesTheFullDecodePath) {
  const auto crop = crop_spec(224, {0.08, 1.0});
  auto scaled = crop_chain(true, crop);
  auto full = crop_chain(false, crop);
  auto s = make_sample(4, as_png(testing::make_jpeg(2400, 1600, 4)));
  auto with = s;
  run_next(scaled, with);
  EXPECT_FALSE(with.crop_plan);
  EXPECT_EQ(testing::image_of(with).size(), cv::Size(2400, 1600));
  EXPECT_EQ(output_bytes(scaled, s), output_bytes(full, s));
}

TEST(ScaledDecode, OnlyACropRightAfterDecodeIsPlanned) {
  flip_spec flip;
  flip.p = 0.5;
  auto chain =
      transform_chain::build({decode_spec{}, flip, crop_spec(224, {0.08, 1.0}), to_uint8_spec{}});
  ASSERT_TRUE(chain);
  auto s = make_sample(5, testing::make_jpeg(2400, 1800, 5));
  run_next(*chain, s);
  EXPECT_FALSE(s.crop_plan);
  EXPECT_EQ(testing::image_of(s).size(), cv::Size(2400, 1800));
  ASSERT_TRUE(chain->run_all(s));
  EXPECT_EQ(testing::array_of(s).extent(1), 224);
}

TEST(ScaledDecode, APlanThatDoesNotFitTheImageIsATransformError) {
  auto chain = crop_chain(true, crop_spec(224, {0.08, 1.0}));
  auto s = make_sample(6, testing::make_jpeg(2400, 1800, 6));
  run_next(chain, s);
  ASSERT_TRUE(s.crop_plan);
  s.crop_plan->decoded = {0, 0, 17, 17};  // not the image that was decoded
  auto failed = chain.run_next(s);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), errc::transform_error);
  EXPECT_NE(failed.error().message().find("sample 6 (key 'img_6.jpg'), step random_resized_crop"),
            std::string::npos)
      << failed.error().message();
  EXPECT_EQ(s.next_step, 1u);
}

// 1/2 only where the box stays 1.25x the output; 1/4 and 1/8 as smallest_scale_for_crop.
TEST(ScaledDecode, AReductionToAHalfLeavesTheResamplerAQuarterMore) {
  const auto scales = jpeg_fast_reduction_scales();
  const image_extent out{224, 224};
  auto plan = [&](int side) { return planned_decode_scale({0, 0, side, side}, out, scales); };
  EXPECT_EQ(plan(448), (scale_ratio{1, 1}));  // 1/2 would leave exactly 224: nothing to blur
  EXPECT_EQ(plan(559), (scale_ratio{1, 1}));
  EXPECT_EQ(plan(560), (scale_ratio{1, 2}));  // 280 = 1.25 x 224
  EXPECT_EQ(plan(896), (scale_ratio{1, 4}));  // 224 at 1/4: taken as it is
  EXPECT_EQ(plan(1792), (scale_ratio{1, 8}));
  EXPECT_EQ(planned_decode_scale({0, 0, 600, 500}, {224, 224}, scales), (scale_ratio{1, 1}));
  EXPECT_EQ(planned_decode_scale({0, 0, 600, 560}, {224, 224}, scales), (scale_ratio{1, 2}));
}

}  // namespace
}  // namespace conveyor
