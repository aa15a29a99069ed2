// JPEG encoding (OpenCV's encoder in a full build, TurboJPEG's in a lean one): what it writes
// decodes back to the image, and what it cannot encode is an error that says why.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/jpeg_encoder.hpp"

namespace conveyor {
namespace {

cv::Mat gradient(int width, int height) {
  cv::Mat bgr(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      bgr.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<std::uint8_t>(x * 255 / (width - 1)),
                                          static_cast<std::uint8_t>(y * 255 / (height - 1)), 128);
    }
  }
  return bgr;
}

TEST(JpegEncoder, WritesAJpegThatDecodesBackToTheImage) {
  cv::Mat bgr = gradient(96, 64);
  auto bytes = encode_jpeg(bgr, 95);
  ASSERT_TRUE(bytes) << bytes.error().what();
  ASSERT_TRUE(is_jpeg(bytes->data(), bytes->size()));
  auto rgb = decode_image(*bytes);
  ASSERT_TRUE(rgb) << rgb.error().what();
  ASSERT_EQ(rgb->size(), bgr.size());
  cv::Mat back;
  cv::Mat channels[3];
  cv::split(*rgb, channels);
  std::swap(channels[0], channels[2]);  // the decoder writes RGB
  cv::merge(channels, 3, back);
  EXPECT_LT(cv::norm(back, bgr, cv::NORM_L1) / static_cast<double>(bgr.total() * 3), 2.0);
}

TEST(JpegEncoder, RefusesWhatItCannotEncode) {
  auto grey = encode_jpeg(cv::Mat(8, 8, CV_8UC1, cv::Scalar(0)), 90);
  ASSERT_FALSE(grey);
  EXPECT_EQ(grey.error().code(), errc::invalid_argument);
  EXPECT_NE(grey.error().message().find("CV_8UC1"), std::string::npos) << grey.error().message();
  auto quality = encode_jpeg(gradient(8, 8), 0);
  ASSERT_FALSE(quality);
  EXPECT_NE(quality.error().message().find("quality"), std::string::npos);
}

}  // namespace
}  // namespace conveyor
