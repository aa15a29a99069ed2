// The image decoder on real encoded bytes: JPEG through TurboJPEG, other formats through
// OpenCV, and every kind of bad input turned into a decode_error.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "core/codecs/jpeg_decoder.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

std::vector<std::uint8_t> encode(const cv::Mat& bgr, const std::string& ext,
                                 const std::vector<int>& params = {}) {
  std::vector<std::uint8_t> out;
  EXPECT_TRUE(cv::imencode(ext, bgr, out, params));
  return out;
}

/// OpenCV's own decode, as RGB: the reference for what the bytes hold.
cv::Mat opencv_rgb(const std::vector<std::uint8_t>& bytes) {
  cv::Mat bgr = cv::imdecode(bytes, cv::IMREAD_COLOR);
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return rgb;
}

double mean_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  cv::Scalar per_channel = cv::mean(cv::abs(a - b));
  return (per_channel[0] + per_channel[1] + per_channel[2]) / 3.0;
}

/// Where the entropy-coded data starts (just after the start-of-scan marker).
std::size_t start_of_scan(const std::vector<std::uint8_t>& jpeg) {
  for (std::size_t i = 0; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) {
      return i + 2;
    }
  }
  ADD_FAILURE() << "no SOS marker";
  return 0;
}

void expect_decode_error(const std::vector<std::uint8_t>& bytes, const std::string& why) {
  auto image = decode_image(bytes);
  ASSERT_FALSE(image) << "decoded " << bytes.size() << " bad bytes";
  EXPECT_EQ(image.error().code(), errc::decode_error);
  EXPECT_NE(image.error().message().find(why), std::string::npos) << image.error().message();
}

TEST(JpegDecoder, DecodesGeneratedJpegToRgbOfItsSize) {
  auto jpeg = testing::make_jpeg(320, 240, 7);
  auto image = decode_image(jpeg);
  ASSERT_TRUE(image) << image.error().what();
  EXPECT_EQ(image->cols, 320);
  EXPECT_EQ(image->rows, 240);
  EXPECT_EQ(image->type(), CV_8UC3);
  EXPECT_LT(mean_abs_diff(*image, opencv_rgb(jpeg)), 2.0);
}

TEST(JpegDecoder, PureColoursComeOutInRgbOrder) {
  cv::Mat red_bgr(64, 48, CV_8UC3, cv::Scalar(0, 0, 255));
  auto image = decode_image(encode(red_bgr, ".jpg", {cv::IMWRITE_JPEG_QUALITY, 95}));
  ASSERT_TRUE(image) << image.error().what();
  cv::Vec3b centre = image->at<cv::Vec3b>(32, 24);
  EXPECT_GE(centre[0], 250);  // R
  EXPECT_LE(centre[1], 5);    // G
  EXPECT_LE(centre[2], 5);    // B
}

TEST(JpegDecoder, GreyJpegBecomesThreeEqualChannels) {
  cv::Mat grey(40, 30, CV_8UC1, cv::Scalar(77));
  auto image = decode_image(encode(grey, ".jpg"));
  ASSERT_TRUE(image) << image.error().what();
  ASSERT_EQ(image->type(), CV_8UC3);
  cv::Vec3b pixel = image->at<cv::Vec3b>(20, 15);
  EXPECT_NEAR(pixel[0], 77, 2);
  EXPECT_EQ(pixel[0], pixel[1]);
  EXPECT_EQ(pixel[1], pixel[2]);
}

TEST(JpegDecoder, PngFallsBackToOpenCvAndIsRgb) {
  cv::Mat bgr(30, 50, CV_8UC3);
  cv::randu(bgr, 0, 256);
  auto image = decode_image(encode(bgr, ".png"));
  ASSERT_TRUE(image) << image.error().what();
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  EXPECT_EQ(cv::norm(*image, rgb, cv::NORM_INF), 0.0);  // PNG is lossless: exact
}

TEST(JpegDecoder, EmptyInputIsADecodeError) {
  expect_decode_error({}, "empty file");
}

TEST(JpegDecoder, RandomBytesAreADecodeError) {
  std::mt19937_64 rng(3);
  std::vector<std::uint8_t> bytes(4096);
  for (auto& b : bytes) {
    b = static_cast<std::uint8_t>(rng());
  }
  bytes[0] = 0x00;  // not a JPEG start-of-image by chance
  expect_decode_error(bytes, "not an image");
}

TEST(JpegDecoder, TextFileIsADecodeError) {
  std::string text = "label,file\n3,img_0001.jpg\nThis is a CSV file, not an image.\n";
  expect_decode_error({text.begin(), text.end()}, "not an image");
}

TEST(JpegDecoder, JpegMagicFollowedByGarbageIsADecodeError) {
  std::mt19937_64 rng(5);
  std::vector<std::uint8_t> bytes(2048);
  for (auto& b : bytes) {
    b = static_cast<std::uint8_t>(rng());
  }
  bytes[0] = 0xFF;
  bytes[1] = 0xD8;
  auto image = decode_image(bytes);
  ASSERT_FALSE(image);
  EXPECT_EQ(image.error().code(), errc::decode_error);
}

TEST(JpegDecoder, TruncatedJpegIsADecodeError) {
  auto jpeg = testing::make_jpeg(320, 240, 7);
  jpeg.resize(jpeg.size() / 2);
  expect_decode_error(jpeg, "truncated or corrupt JPEG");
}

TEST(JpegDecoder, CorruptEntropyDataIsADecodeError) {
  auto jpeg = testing::make_jpeg(320, 240, 7);
  std::size_t sos = start_of_scan(jpeg);
  std::size_t middle = sos + (jpeg.size() - sos) / 2;
  std::mt19937_64 rng(11);
  for (std::size_t i = middle; i < middle + 64; ++i) {
    jpeg[i] = static_cast<std::uint8_t>(rng());
  }
  expect_decode_error(jpeg, "truncated or corrupt JPEG");
}

TEST(JpegDecoder, LenientModeGreyFillsWhatStrictModeRefuses) {
  auto jpeg = testing::make_jpeg(320, 240, 7);
  jpeg.resize(jpeg.size() / 2);
  decode_options lenient;
  lenient.strict = false;
  auto image = decode_image(jpeg, lenient);
  ASSERT_TRUE(image) << image.error().what();
  EXPECT_EQ(image->size(), cv::Size(320, 240));
}

TEST(JpegDecoder, JpegMissingOnlyItsEndMarkerDecodesInFull) {
  auto jpeg = testing::make_jpeg(320, 240, 7);
  auto full = decode_image(jpeg);
  ASSERT_TRUE(full) << full.error().what();
  ASSERT_EQ(jpeg[jpeg.size() - 2], 0xFF);
  ASSERT_EQ(jpeg[jpeg.size() - 1], 0xD9);
  jpeg.resize(jpeg.size() - 2);
  auto image = decode_image(jpeg);
  ASSERT_TRUE(image) << image.error().what();
  EXPECT_EQ(cv::norm(*image, *full, cv::NORM_INF), 0.0);
}

TEST(JpegDecoder, GoodJpegDecodesAfterBadOnesOnTheSameThread) {
  // Cut before the frame header, before the scan header (a failed header read, which leaves a
  // TurboJPEG 2.1 handle unusable), and in the middle of the scan.
  auto good = testing::make_jpeg(96, 64, 1);
  for (std::size_t cut : {std::size_t{100}, start_of_scan(good) - 2, good.size() / 2}) {
    std::vector<std::uint8_t> bad(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_FALSE(probe_image(bad) && decode_image(bad));
    auto image = decode_image(good);
    ASSERT_TRUE(image) << "after a cut at " << cut << ": " << image.error().what();
    EXPECT_EQ(image->size(), cv::Size(96, 64));
    auto info = probe_image(good);
    ASSERT_TRUE(info) << info.error().what();
    EXPECT_EQ(info->width, 96);
  }
}

TEST(JpegDecoder, DamagedJpegsNeverCrash) {
  auto jpeg = testing::make_jpeg(160, 120, 9);
  std::mt19937_64 rng(13);
  for (int i = 0; i < 300; ++i) {
    auto damaged = jpeg;
    if (i % 3 == 0) {
      damaged.resize(rng() % damaged.size());
    } else {
      for (int k = 0; k < 1 + i % 16; ++k) {
        damaged[2 + rng() % (damaged.size() - 2)] = static_cast<std::uint8_t>(rng());
      }
    }
    auto image = decode_image(damaged);
    if (image) {
      EXPECT_EQ(image->type(), CV_8UC3);
    } else {
      EXPECT_EQ(image.error().code(), errc::decode_error) << image.error().what();
    }
  }
}

TEST(JpegDecoder, ProbeReadsTheSizeOfJpegAndPng) {
  auto info = probe_image(testing::make_jpeg(333, 251, 2));
  ASSERT_TRUE(info) << info.error().what();
  EXPECT_EQ(info->width, 333);
  EXPECT_EQ(info->height, 251);

  auto png = probe_image(encode(cv::Mat(17, 23, CV_8UC3, cv::Scalar::all(9)), ".png"));
  ASSERT_TRUE(png) << png.error().what();
  EXPECT_EQ(png->width, 23);
  EXPECT_EQ(png->height, 17);
}

TEST(JpegDecoder, ProbeRejectsWhatIsNotAnImage) {
  for (const auto& bytes : {std::vector<std::uint8_t>{}, std::vector<std::uint8_t>{'h', 'i'},
                            std::vector<std::uint8_t>{0xFF, 0xD8, 0xFF}}) {
    auto info = probe_image(bytes);
    ASSERT_FALSE(info);
    EXPECT_EQ(info.error().code(), errc::decode_error);
  }
}

TEST(JpegDecoder, ScaledDecodeMatchesScaledSize) {
  auto jpeg = testing::make_jpeg(333, 251, 4);
  auto png = encode(opencv_rgb(jpeg), ".png");
  for (int denom : {1, 2, 4, 8}) {
    decode_options options;
    options.scale_denom = denom;
    auto expected_size = scaled_size({333, 251}, options);
    ASSERT_TRUE(expected_size);
    EXPECT_EQ(expected_size->width, (333 + denom - 1) / denom);
    EXPECT_EQ(expected_size->height, (251 + denom - 1) / denom);
    for (const auto* bytes : {&jpeg, &png}) {
      auto image = decode_image(*bytes, options);
      ASSERT_TRUE(image) << image.error().what();
      EXPECT_EQ(image->size(), cv::Size(expected_size->width, expected_size->height));
    }
  }
}

TEST(JpegDecoder, UnsupportedScaleIsAnInvalidArgument) {
  decode_options options;
  options.scale_denom = 3;
  auto image = decode_image(testing::make_jpeg(32, 32, 1), options);
  ASSERT_FALSE(image);
  EXPECT_EQ(image.error().code(), errc::invalid_argument);
  EXPECT_FALSE(scaled_size({32, 32}, options));
}

}  // namespace
}  // namespace conveyor
