// Each transform step against reference values worked out by hand from torchvision's
// definitions, the crop geometry on its own, and the validation of transform specs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "core/transforms/crop_geometry.hpp"
#include "core/transforms/transform_step.hpp"
#include "support/step_harness.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

/// A width x height RGB image whose every pixel is different: (x, y, x + 10 * y) mod 256.
cv::Mat numbered_image(int width, int height) {
  cv::Mat image(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      image.at<cv::Vec3b>(y, x) =
          cv::Vec3b(static_cast<std::uint8_t>(x), static_cast<std::uint8_t>(y),
                    static_cast<std::uint8_t>((x + 10 * y) % 256));
    }
  }
  return image;
}

using testing::array_of;
using testing::image_of;
using testing::sample_with_image;

step_ptr build(const transform_spec& spec) {
  auto step = testing::step_of(spec);
  EXPECT_TRUE(step) << step.error().what();
  return step ? std::move(*step) : nullptr;
}

void apply(const transform_spec& spec, sample_state& s, std::uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  auto step = build(spec);
  ASSERT_TRUE(step);
  auto ok = step->apply(s, rng);
  ASSERT_TRUE(ok) << ok.error().what();
}

rrc_params params(double scale_min, double scale_max, double ratio_min, double ratio_max) {
  rrc_params p;
  p.scale = {scale_min, scale_max};
  p.ratio = {ratio_min, ratio_max};
  return p;
}

/// The centred box random_resized_crop_box falls back to; it depends on the ratio range only,
/// so an unreachable area forces it.
crop_box fallback_box(int width, int height, const rrc_params& p) {
  std::mt19937_64 rng(0);
  return random_resized_crop_box(width, height, params(100, 100, p.ratio[0], p.ratio[1]), rng);
}

// ---- flip -------------------------------------------------------------------------------

TEST(FlipStep, MirrorsEveryRowPixelByPixel) {
  cv::Mat original = numbered_image(5, 3);
  auto s = sample_with_image(original.clone());
  cv::Mat before = image_of(s);  // shares the pixels: the step must not write into them
  flip_spec always;
  always.p = 1.0;
  apply(always, s);
  ASSERT_EQ(image_of(s).size(), original.size());
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 5; ++x) {
      EXPECT_EQ(image_of(s).at<cv::Vec3b>(y, x), original.at<cv::Vec3b>(y, 4 - x)) << y << "," << x;
    }
  }
  EXPECT_EQ(cv::norm(before, original, cv::NORM_INF), 0.0);
}

TEST(FlipStep, NeverFlipsAtZeroAndFlipsAboutHalfAtOneHalf) {
  cv::Mat original = numbered_image(4, 2);
  flip_spec never;
  never.p = 0.0;
  flip_spec half;
  int flipped = 0;
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    auto s = sample_with_image(original);
    apply(never, s, seed);
    EXPECT_EQ(cv::norm(image_of(s), original, cv::NORM_INF), 0.0);
    apply(half, s, seed);
    flipped += cv::norm(image_of(s), original, cv::NORM_INF) != 0.0 ? 1 : 0;
  }
  EXPECT_GT(flipped, 400);
  EXPECT_LT(flipped, 600);
}

// ---- random_resized_crop ------------------------------------------------------------------

TEST(RandomResizedCropBox, WideImageFallsBackToCentredMaxRatioBox) {
  // Area 100000 at any ratio in [3/4, 4/3] needs a side >= 273 > 100: no try fits.
  std::mt19937_64 rng(1);
  crop_box box = random_resized_crop_box(1000, 100, params(1.0, 1.0, 3.0 / 4, 4.0 / 3), rng);
  EXPECT_EQ(box, (crop_box{433, 0, 133, 100}));  // w = round(100 * 4/3), left = (1000-133)/2
}

TEST(RandomResizedCropBox, TallImageFallsBackToCentredMinRatioBox) {
  std::mt19937_64 rng(1);
  crop_box box = random_resized_crop_box(100, 1000, params(1.0, 1.0, 3.0 / 4, 4.0 / 3), rng);
  EXPECT_EQ(box, (crop_box{0, 433, 100, 133}));  // h = round(100 / (3/4))
}

TEST(RandomResizedCropBox, FallbackWithinRatioRangeIsTheWholeImage) {
  std::mt19937_64 rng(1);
  crop_box box = random_resized_crop_box(120, 100, params(1.5, 2.0, 3.0 / 4, 4.0 / 3), rng);
  EXPECT_EQ(box, (crop_box{0, 0, 120, 100}));
}

TEST(RandomResizedCropBox, FallbackRoundsHalvesToEvenLikePython) {
  std::mt19937_64 rng(1);
  // w = round(10 * 1.25) = round(12.5) = 12 in Python (not 13), left = (100 - 12) // 2.
  crop_box box = random_resized_crop_box(100, 10, params(1.0, 1.0, 0.8, 1.25), rng);
  EXPECT_EQ(box, (crop_box{44, 0, 12, 10}));
}

TEST(RandomResizedCropBox, StaysInsideAndWithinScaleAndRatioOverManySeeds) {
  const std::vector<std::pair<int, int>> sizes{{500, 375}, {375, 500}, {64, 64}, {1000, 100},
                                               {3, 2},     {640, 427}, {1, 1}};
  const std::vector<rrc_params> ranges{rrc_params{}, params(0.5, 0.9, 0.5, 2.0),
                                       params(0.01, 0.02, 1.0, 1.0)};
  int random_boxes = 0;
  for (const auto& [w, h] : sizes) {
    for (const auto& p : ranges) {
      const crop_box fallback = fallback_box(w, h, p);
      const double area = static_cast<double>(w) * h;
      for (std::uint64_t seed = 0; seed < 300; ++seed) {
        std::mt19937_64 rng(seed);
        crop_box b = random_resized_crop_box(w, h, p, rng);
        ASSERT_GT(b.width, 0);
        ASSERT_GT(b.height, 0);
        ASSERT_GE(b.left, 0);
        ASSERT_GE(b.top, 0);
        ASSERT_LE(b.left + b.width, w);
        ASSERT_LE(b.top + b.height, h);
        if (b == fallback) {
          continue;
        }
        ++random_boxes;
        // w = round(sqrt(A * r)), h = round(sqrt(A / r)): each within 0.5 of the exact value.
        double bw = b.width;
        double bh = b.height;
        EXPECT_LE((bw - 0.5) * (bh - 0.5), p.scale[1] * area);
        EXPECT_GE((bw + 0.5) * (bh + 0.5), p.scale[0] * area);
        EXPECT_GE((bw + 0.5) / (bh - 0.5), p.ratio[0]);
        EXPECT_LE((bw - 0.5) / (bh + 0.5), p.ratio[1]);
      }
    }
  }
  EXPECT_GT(random_boxes, 3000);
}

TEST(RandomResizedCropStep, ResizesTheCropToTheRequestedSize) {
  auto s = sample_with_image(cv::Mat(375, 500, CV_8UC3, cv::Scalar(10, 20, 30)));
  random_resized_crop_spec spec;
  spec.height = 224;
  spec.width = 200;
  apply(spec, s);
  EXPECT_EQ(image_of(s).size(), cv::Size(200, 224));
  EXPECT_EQ(image_of(s).at<cv::Vec3b>(100, 100), cv::Vec3b(10, 20, 30));
}

TEST(RandomResizedCropStep, CropsTheBoxTheGeometryDraws) {
  cv::Mat original = numbered_image(200, 150);
  random_resized_crop_spec spec;
  spec.params = params(0.1, 0.5, 0.5, 2.0);
  std::mt19937_64 rng(99);
  crop_box box = random_resized_crop_box(200, 150, spec.params, rng);
  spec.height = box.height;  // resizing to the box's own size leaves the pixels as they were
  spec.width = box.width;
  auto s = sample_with_image(original);
  apply(spec, s, 99);
  cv::Mat expected = original(cv::Rect(box.left, box.top, box.width, box.height));
  EXPECT_EQ(cv::norm(image_of(s), expected, cv::NORM_INF), 0.0);
}

// ---- center_crop --------------------------------------------------------------------------

TEST(CenterCropBox, RoundsOffsetsHalfToEven) {
  EXPECT_EQ(center_crop_box(9, 9, 4, 4), (crop_box{2, 2, 4, 4}));                // round(2.5) = 2
  EXPECT_EQ(center_crop_box(7, 5, 4, 2), (crop_box{2, 2, 4, 2}));                // round(1.5) = 2
  EXPECT_EQ(center_crop_box(256, 341, 224, 224), (crop_box{16, 58, 224, 224}));  // 58.5 -> 58
  EXPECT_EQ(center_crop_box(4, 4, 4, 4), (crop_box{0, 0, 4, 4}));
}

TEST(CenterCropStep, TakesTheCentredPixels) {
  cv::Mat original = numbered_image(9, 7);
  center_crop_spec spec;
  spec.height = 4;
  spec.width = 4;
  auto s = sample_with_image(original);
  apply(spec, s);
  // left = round((9 - 4) / 2) = 2, top = round((7 - 4) / 2) = 2
  EXPECT_EQ(cv::norm(image_of(s), original(cv::Rect(2, 2, 4, 4)), cv::NORM_INF), 0.0);
}

TEST(CenterCropStep, PadsASmallerImageWithZerosLikeTorchvision) {
  cv::Mat original = numbered_image(2, 2);
  center_crop_spec spec;
  spec.height = 3;
  spec.width = 4;
  auto s = sample_with_image(original);
  apply(spec, s);
  ASSERT_EQ(image_of(s).size(), cv::Size(4, 3));
  // padding left 1, right 1, top 0, bottom 1
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 4; ++x) {
      bool inside = y < 2 && x >= 1 && x < 3;
      cv::Vec3b want = inside ? original.at<cv::Vec3b>(y, x - 1) : cv::Vec3b(0, 0, 0);
      EXPECT_EQ(image_of(s).at<cv::Vec3b>(y, x), want) << y << "," << x;
    }
  }
}

// ---- resize -------------------------------------------------------------------------------

TEST(ShorterSideExtent, KeepsAspectAndRoundsDown) {
  auto landscape = shorter_side_extent(500, 375, 256);  // 256 * 500 / 375 = 341.33
  EXPECT_EQ(landscape.width, 341);
  EXPECT_EQ(landscape.height, 256);
  auto portrait = shorter_side_extent(375, 500, 256);
  EXPECT_EQ(portrait.width, 256);
  EXPECT_EQ(portrait.height, 341);
  auto square = shorter_side_extent(300, 300, 224);
  EXPECT_EQ(square.width, 224);
  EXPECT_EQ(square.height, 224);
}

TEST(ResizeStep, ShorterSideAndExactSize) {
  resize_spec shorter;
  shorter.size = 256;
  auto s = sample_with_image(cv::Mat(375, 500, CV_8UC3, cv::Scalar::all(128)));
  apply(shorter, s);
  EXPECT_EQ(image_of(s).size(), cv::Size(341, 256));

  resize_spec exact;
  exact.height = 100;
  exact.width = 50;
  apply(exact, s);
  EXPECT_EQ(image_of(s).size(), cv::Size(50, 100));
  EXPECT_EQ(image_of(s).at<cv::Vec3b>(50, 25), cv::Vec3b(128, 128, 128));
}

// ---- normalize and to_uint8 --------------------------------------------------------------

void expect_normalized(const host_array& out, const std::array<double, 3>& rgb,
                       const normalize_spec& spec) {
  ASSERT_EQ(out.type, dtype::float32);
  const std::size_t plane = static_cast<std::size_t>(out.extent(1) * out.extent(2));
  ASSERT_EQ(out.bytes.size(), 3 * plane * sizeof(float));
  for (std::size_t c = 0; c < 3; ++c) {
    const double want = (rgb[c] / 255.0 - spec.mean[c]) / spec.stddev[c];
    for (std::size_t i = 0; i < plane; ++i) {
      ASSERT_NEAR(out.data<float>()[c * plane + i], want, 1e-6) << "channel " << c;
    }
  }
}

TEST(NormalizeStep, PureColourGivesTheFormulaPerRgbPlane) {
  const std::array<double, 3> rgb{200, 100, 50};  // distinct, so a swapped channel shows
  auto s = sample_with_image(cv::Mat(3, 4, CV_8UC3, cv::Scalar(rgb[0], rgb[1], rgb[2])));
  normalize_spec imagenet;
  apply(imagenet, s);
  EXPECT_EQ(array_of(s).extent(0), 3);
  EXPECT_EQ(array_of(s).extent(1), 3);
  EXPECT_EQ(array_of(s).extent(2), 4);
  expect_normalized(array_of(s), rgb, imagenet);
}

TEST(NormalizeStep, CustomMeanAndStdOverEveryValue) {
  normalize_spec spec;
  spec.mean = {0.5, 0.25, 0.0};
  spec.stddev = {0.5, 2.0, -1.0};
  for (int v = 0; v < 256; v += 15) {
    const std::array<double, 3> rgb{double(v), double(255 - v), double((v * 7) % 256)};
    auto s = sample_with_image(cv::Mat(2, 2, CV_8UC3, cv::Scalar(rgb[0], rgb[1], rgb[2])));
    apply(spec, s);
    expect_normalized(array_of(s), rgb, spec);
  }
}

TEST(ToUint8Step, WritesPlanarRgb) {
  cv::Mat original = numbered_image(5, 3);
  auto s = sample_with_image(original);
  apply(to_uint8_spec{}, s);
  ASSERT_EQ(array_of(s).type, dtype::uint8);
  ASSERT_EQ(array_of(s).bytes.size(), 3u * 3 * 5);
  const std::uint8_t* out = array_of(s).data<std::uint8_t>();
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 3; ++y) {
      for (int x = 0; x < 5; ++x) {
        EXPECT_EQ(out[(c * 3 + y) * 5 + x], original.at<cv::Vec3b>(y, x)[c]);
      }
    }
  }
}

// ---- decode -------------------------------------------------------------------------------

TEST(DecodeStep, DecodesTheImagePartIntoItsField) {
  auto s = testing::sample_with_bytes(testing::make_jpeg(64, 48, 3));
  s.key = "a.jpg";
  apply(decode_spec{}, s);
  EXPECT_EQ(image_of(s).size(), cv::Size(64, 48));
  EXPECT_EQ(image_of(s).type(), CV_8UC3);
}

// ---- errors -------------------------------------------------------------------------------

TEST(StepErrors, NameTheSampleIdKeyAndStep) {
  auto s = testing::sample_with_bytes({});
  s.sample_id = 1234;
  s.key = "shard-00007/record-55";
  s.encoded = testing::make_jpeg(64, 48, 3);
  s.encoded.resize(s.encoded.size() / 2);
  const auto truncated = s.encoded;
  std::mt19937_64 rng(1);
  auto decode = build(decode_spec{});
  auto failed = decode->apply(s, rng);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), errc::decode_error);
  const std::string& message = failed.error().message();
  EXPECT_NE(message.find("sample 1234"), std::string::npos) << message;
  EXPECT_NE(message.find("shard-00007/record-55"), std::string::npos) << message;
  EXPECT_NE(message.find("decode"), std::string::npos) << message;
  EXPECT_NE(message.find("truncated or corrupt JPEG"), std::string::npos) << message;
  EXPECT_EQ(s.encoded, truncated);  // kept, for a retry or the quarantine report
  EXPECT_TRUE(image_of(s).empty());
}

TEST(StepErrors, ImageStepWithoutAnImageIsATransformError) {
  auto s = testing::sample_with_bytes({});
  s.sample_id = 7;
  s.key = "a.jpg";
  std::mt19937_64 rng(1);
  center_crop_spec square;
  square.height = square.width = 4;
  auto crop = build(square);
  auto failed = crop->apply(s, rng);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), errc::transform_error);
  EXPECT_NE(failed.error().message().find("sample 7 (key 'a.jpg'), step center_crop"),
            std::string::npos)
      << failed.error().message();
}

TEST(StepErrors, NormalizeRefusesANonRgbImage) {
  auto s = sample_with_image(cv::Mat(4, 4, CV_8UC1, cv::Scalar(1)));
  std::mt19937_64 rng(1);
  auto failed = build(normalize_spec{})->apply(s, rng);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), errc::transform_error);
  EXPECT_NE(failed.error().message().find("sample 42"), std::string::npos);
  EXPECT_TRUE(array_of(s).bytes.empty());
}

// ---- specs --------------------------------------------------------------------------------

void expect_invalid(const transform_spec& spec, const std::string& op, const std::string& param) {
  auto step = check_params(spec);
  ASSERT_FALSE(step) << op << " " << param << " was accepted";
  EXPECT_EQ(step.error().code(), errc::invalid_argument);
  EXPECT_EQ(step.error().message().rfind(op + ": ", 0), 0u) << step.error().message();
  EXPECT_NE(step.error().message().find(param), std::string::npos) << step.error().message();
}

TEST(TransformSpecs, InvalidParametersAreRejected) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto rrc = [](int h, int w, rrc_params p) {
    random_resized_crop_spec spec;
    spec.height = h;
    spec.width = w;
    spec.params = p;
    return spec;
  };
  expect_invalid(rrc(0, 224, {}), "random_resized_crop", "height");
  expect_invalid(rrc(224, -1, {}), "random_resized_crop", "width");
  expect_invalid(rrc(224, 224, params(0.0, 1.0, 0.75, 1.33)), "random_resized_crop", "scale");
  expect_invalid(rrc(224, 224, params(0.9, 0.1, 0.75, 1.33)), "random_resized_crop", "scale");
  expect_invalid(rrc(224, 224, params(0.1, 1.0, 0.0, 1.33)), "random_resized_crop", "ratio");
  expect_invalid(rrc(224, 224, params(0.1, 1.0, 1.33, 0.75)), "random_resized_crop", "ratio");
  expect_invalid(rrc(224, 224, params(0.1, nan, 0.75, 1.33)), "random_resized_crop", "scale");
  auto bad_interp = rrc(224, 224, {});
  bad_interp.interp = static_cast<interpolation>(99);
  expect_invalid(bad_interp, "random_resized_crop", "interpolation");

  auto resize = [](int size, int height, int width, int max_size = 0) {
    resize_spec spec;
    spec.size = size;
    spec.height = height;
    spec.width = width;
    spec.max_size = max_size;
    return spec;
  };
  expect_invalid(resize_spec{}, "resize", "size");
  expect_invalid(resize(-5, 0, 0), "resize", "size");
  expect_invalid(resize(256, 10, 10), "resize", "not both");
  expect_invalid(resize(0, 0, 10), "resize", "height");
  expect_invalid(resize(0, 10, -2), "resize", "width");
  expect_invalid(resize(800, 0, 0, 700), "resize", "max_size");
  expect_invalid(resize(0, 10, 10, 1333), "resize", "max_size");

  auto center = [](int height, int width) {
    center_crop_spec spec;
    spec.height = height;
    spec.width = width;
    return spec;
  };
  expect_invalid(center(0, 10), "center_crop", "height");
  expect_invalid(center(10, -1), "center_crop", "width");

  auto flip = [](double p) {
    flip_spec spec;
    spec.p = p;
    return spec;
  };
  expect_invalid(flip(-0.1), "flip", "p");
  expect_invalid(flip(1.5), "flip", "p");
  expect_invalid(flip(nan), "flip", "p");

  normalize_spec zero_std;
  zero_std.stddev[1] = 0.0;
  expect_invalid(zero_std, "normalize", "std[1]");
  normalize_spec nan_std;
  nan_std.stddev[2] = nan;
  expect_invalid(nan_std, "normalize", "std[2]");
  normalize_spec inf_mean;
  inf_mean.mean[0] = inf;
  expect_invalid(inf_mean, "normalize", "mean[0]");
}

TEST(TransformSpecs, ValidEdgeValuesAreAccepted) {
  flip_spec never;
  never.p = 0.0;
  flip_spec always;
  always.p = 1.0;
  EXPECT_TRUE(testing::step_of(never));
  EXPECT_TRUE(testing::step_of(always));
  resize_spec tiny;
  tiny.height = tiny.width = 1;
  tiny.interp = interpolation::area;
  EXPECT_TRUE(testing::step_of(tiny));
  random_resized_crop_spec rrc;
  rrc.height = rrc.width = 1;
  rrc.params = params(1.0, 1.0, 1.0, 1.0);
  EXPECT_TRUE(testing::step_of(rrc));
  normalize_spec negative_std;
  negative_std.stddev = {-1.0, 1.0, 1.0};
  EXPECT_TRUE(testing::step_of(negative_std));
}

TEST(TransformSpecs, OpNamesRoundTripThroughDefaultSpec) {
  for (std::string_view op : {"decode", "random_resized_crop", "resize", "center_crop", "flip",
                              "normalize", "to_uint8"}) {
    auto spec = default_spec(op);
    ASSERT_TRUE(spec) << op;
    EXPECT_EQ(op_name(*spec), op);
  }
  auto unknown = default_spec("rotate");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), errc::invalid_argument);
  EXPECT_NE(unknown.error().message().find("'rotate'"), std::string::npos);
  EXPECT_NE(unknown.error().message().find("decode, random_resized_crop"), std::string::npos)
      << unknown.error().message();
}

TEST(TransformSpecs, StepsAreNamedAfterTheirOp) {
  for (const auto& spec : imagenet_train_recipe()) {
    EXPECT_EQ(build(spec)->name(), op_name(spec));
  }
}

}  // namespace
}  // namespace conveyor
