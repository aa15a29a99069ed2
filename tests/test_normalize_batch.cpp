// The CPU reference of batch normalisation (what the CUDA kernel is checked against) computes
// what the normalize step computes, from CHW or HWC uint8 input, and rounds bfloat16 to
// nearest even.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>

#include "core/transforms/normalize_batch.hpp"
#include "core/transforms/transform_step.hpp"
#include "support/normalize_fixtures.hpp"
#include "support/step_harness.hpp"

namespace conveyor {
namespace {

/// An RGB image of random bytes that holds every byte value.
cv::Mat random_image(int width, int height, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  cv::Mat image(height, width, CV_8UC3);
  for (std::size_t i = 0; i < image.total() * 3; ++i) {
    image.data[i] = static_cast<std::uint8_t>(i < 256 ? i : rng());
  }
  return image;
}

host_array run_step(const transform_spec& spec, const cv::Mat& image) {
  auto step = testing::step_of(spec);
  EXPECT_TRUE(step) << step.error().what();
  auto s = testing::sample_with_image(image.clone());
  std::mt19937_64 rng(1);
  auto ok = (*step)->apply(s, rng);
  EXPECT_TRUE(ok) << ok.error().what();
  return testing::array_of(s);
}

uint8_batch_shape shape_of(const cv::Mat& image, int samples, pixel_layout layout) {
  return {samples, 3, image.rows, image.cols, layout};
}

/// OpenCV's convertTo fuses the multiply-add on its AVX2 path, as the reference does: there
/// the two agree bit for bit. Elsewhere they differ by at most one rounding.
void expect_same_values(const std::vector<float>& got, const host_array& want) {
  ASSERT_EQ(got.size() * sizeof(float), want.bytes.size());
  const bool fused = cv::checkHardwareSupport(CV_CPU_AVX2);
  for (std::size_t i = 0; i < got.size(); ++i) {
    float w = want.data<float>()[i];
    if (fused) {
      ASSERT_EQ(std::memcmp(&got[i], &w, sizeof w), 0) << "element " << i;
    } else {
      ASSERT_NEAR(got[i], w, 1e-6) << "element " << i;
    }
  }
}

std::vector<float> reference(const std::uint8_t* src, const uint8_batch_shape& shape,
                             const normalize_spec& spec) {
  std::vector<float> out(shape.elements());
  auto ok = normalize_batch(src, shape, coefficients_of(spec), dtype::float32, out.data());
  EXPECT_TRUE(ok) << ok.error().what();
  return out;
}

TEST(NormalizeBatch, ChwReferenceEqualsTheNormalizeStep) {
  for (const auto& spec : {normalize_spec{}, testing::unusual_normalize_spec()}) {
    cv::Mat image = random_image(37, 29, 7);
    host_array planar = run_step(to_uint8_spec{}, image);
    auto got = reference(planar.bytes.data(), shape_of(image, 1, pixel_layout::chw), spec);
    expect_same_values(got, run_step(spec, image));
  }
}

TEST(NormalizeBatch, HwcReferenceEqualsTheNormalizeStep) {
  cv::Mat image = random_image(64, 48, 9);
  auto got = reference(image.data, shape_of(image, 1, pixel_layout::hwc), normalize_spec{});
  expect_same_values(got, run_step(normalize_spec{}, image));
}

TEST(NormalizeBatch, EachSampleOfABatchIsNormalisedInItsPlace) {
  std::vector<cv::Mat> images{random_image(16, 8, 1), random_image(16, 8, 2),
                              random_image(16, 8, 3)};
  std::vector<std::uint8_t> batch;
  for (const auto& image : images) {
    batch.insert(batch.end(), image.data, image.data + image.total() * 3);
  }
  auto got = reference(batch.data(), shape_of(images[0], 3, pixel_layout::hwc), normalize_spec{});
  const std::size_t per_sample = images[0].total() * 3;
  for (std::size_t n = 0; n < images.size(); ++n) {
    std::vector<float> sample(got.begin() + static_cast<std::ptrdiff_t>(n * per_sample),
                              got.begin() + static_cast<std::ptrdiff_t>((n + 1) * per_sample));
    expect_same_values(sample, run_step(normalize_spec{}, images[n]));
  }
}

TEST(NormalizeBatch, BfloatOutputIsTheFloatResultRounded) {
  cv::Mat image = random_image(20, 10, 5);
  auto shape = shape_of(image, 1, pixel_layout::hwc);
  auto k = coefficients_of(normalize_spec{});
  std::vector<float> f32(shape.elements());
  std::vector<std::uint16_t> bf16(shape.elements());
  ASSERT_TRUE(normalize_batch(image.data, shape, k, dtype::float32, f32.data()));
  ASSERT_TRUE(normalize_batch(image.data, shape, k, dtype::bfloat16, bf16.data()));
  for (std::size_t i = 0; i < f32.size(); ++i) {
    ASSERT_EQ(bf16[i], bfloat16_bits(f32[i])) << "element " << i;
  }
}

float from_bits(std::uint32_t u) {
  float f = 0;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TEST(Bfloat16, RoundsToNearestTiesToEven) {
  EXPECT_EQ(bfloat16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_bits(from_bits(0x3f808000)), 0x3f80);  // tie, even below: down
  EXPECT_EQ(bfloat16_bits(from_bits(0x3f818000)), 0x3f82);  // tie, even above: up
  EXPECT_EQ(bfloat16_bits(from_bits(0x3f808001)), 0x3f81);  // above the tie: up
  EXPECT_EQ(bfloat16_bits(from_bits(0x3f807fff)), 0x3f80);  // below the tie: down
  EXPECT_EQ(bfloat16_bits(from_bits(0xbf818000)), 0xbf82);  // sign does not matter
  EXPECT_EQ(bfloat16_bits(from_bits(0x7f7fffff)), 0x7f80);  // the largest float rounds to inf
  EXPECT_EQ(bfloat16_bits(from_bits(0x7f800000)), 0x7f80);  // inf stays inf
  EXPECT_EQ(bfloat16_bits(from_bits(0x7f800001)) & 0x7fc0, 0x7fc0);  // NaN stays a (quiet) NaN
  EXPECT_EQ(bfloat16_value(0x3f82), 1.015625f);
}

TEST(NormalizeBatch, RefusesWhatItCannotNormalise) {
  std::uint8_t in[4] = {};
  float out[4] = {};
  auto k = coefficients_of(normalize_spec{});
  auto four = normalize_batch(in, {1, 4, 1, 1, pixel_layout::chw}, k, dtype::float32, out);
  ASSERT_FALSE(four);
  EXPECT_EQ(four.error().code(), errc::invalid_argument);
  EXPECT_NE(four.error().message().find("1x4x1x1"), std::string::npos) << four.error().message();
  auto to_bytes = normalize_batch(in, {1, 3, 1, 1, pixel_layout::chw}, k, dtype::uint8, out);
  ASSERT_FALSE(to_bytes);
  EXPECT_NE(to_bytes.error().message().find("uint8"), std::string::npos);
}

}  // namespace
}  // namespace conveyor
