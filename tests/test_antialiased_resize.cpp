// PIL's resampling (core/transforms/antialiased_resize.hpp) as plain code: weights that sum
// to one keep flat images flat; a large downscale low-passes a pattern that OpenCV's bilinear
// aliases; a region of an image is the same as that region cut out; nearest picks the pixel
// under each output centre. (Bit-identity with PIL itself: tests/python/test_parity.py.)
#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "core/transforms/antialiased_resize.hpp"

namespace conveyor {
namespace {

constexpr resample_filter filters[] = {resample_filter::box, resample_filter::bilinear,
                                       resample_filter::bicubic};

cv::Mat random_image(int rows, int cols, int seed) {
  cv::Mat m(rows, cols, CV_8UC3);
  cv::theRNG().state = static_cast<std::uint64_t>(seed);
  cv::randu(m, 0, 256);
  return m;
}

TEST(AntialiasedResize, AFlatImageStaysFlatAtAnyScaleAndRegion) {
  cv::Mat flat(301, 407, CV_8UC3, cv::Scalar(17, 130, 250));
  for (auto f : filters) {
    for (cv::Size out : {cv::Size(224, 224), cv::Size(33, 517), cv::Size(1000, 7)}) {
      cv::Mat dst;
      antialiased_resize(flat, {3.25, 10.5, 390.75, 299.0}, out, f, dst);
      ASSERT_EQ(dst.size(), out);
      EXPECT_EQ(cv::norm(dst, cv::Mat(out, CV_8UC3, cv::Scalar(17, 130, 250)), cv::NORM_INF), 0)
          << "filter " << static_cast<int>(f) << " to " << out;
    }
  }
}

TEST(AntialiasedResize, ALargeDownscaleLowPassesWhereOpenCvsBilinearAliases) {
  cv::Mat checker(800, 800, CV_8UC3);  // one-pixel black and white checkerboard
  for (int y = 0; y < checker.rows; ++y) {
    for (int x = 0; x < checker.cols; ++x) {
      checker.at<cv::Vec3b>(y, x) = cv::Vec3b::all((x + y) % 2 ? 255 : 0);
    }
  }
  for (auto f : filters) {
    cv::Mat dst;
    antialiased_resize(checker, whole(checker), {97, 97}, f, dst);
    double lo = 0;
    double hi = 0;
    cv::minMaxLoc(dst.reshape(1), &lo, &hi);
    EXPECT_GE(lo, 120) << "filter " << static_cast<int>(f);  // grey, as the eye sees it
    EXPECT_LE(hi, 135) << "filter " << static_cast<int>(f);
  }
  cv::Mat plain;
  cv::resize(checker, plain, {97, 97}, 0, 0, cv::INTER_LINEAR);
  double lo = 0;
  double hi = 0;
  cv::minMaxLoc(plain.reshape(1), &lo, &hi);
  EXPECT_GT(hi - lo, 100);  // the pattern folds into a coarser one
}

TEST(AntialiasedResize, ARegionIsTheSameAsTheRegionCutOut) {
  auto image = random_image(240, 333, 5);  // odd widths: the vector loops' tails
  const cv::Rect box(17, 9, 301, 211);
  cv::Mat cut = image(box);
  for (auto f : filters) {
    for (cv::Size out : {cv::Size(224, 224), cv::Size(401, 97), cv::Size(301, 211)}) {
      cv::Mat from_region;
      cv::Mat from_cut;
      antialiased_resize(image, {17, 9, 318, 220}, out, f, from_region);
      antialiased_resize(cut.clone(), whole(cut), out, f, from_cut);
      // The region's filters may read past its edges (PIL's resize with a box); the cut has
      // none to read: only the outermost output pixels may differ.
      cv::Rect inner(3, 3, out.width - 6, out.height - 6);
      EXPECT_EQ(cv::norm(from_region(inner), from_cut(inner), cv::NORM_INF), 0)
          << "filter " << static_cast<int>(f) << " to " << out;
    }
  }
}

TEST(AntialiasedResize, SameSizeIsTheIdentityAndRepeatsGiveTheSameBytes) {
  auto image = random_image(123, 77, 9);
  for (auto f : filters) {
    cv::Mat dst;
    antialiased_resize(image, whole(image), image.size(), f, dst);
    EXPECT_EQ(cv::norm(dst, image, cv::NORM_INF), 0) << "filter " << static_cast<int>(f);
    cv::Mat again;
    antialiased_resize(image, {1.5, 2.5, 70.25, 120.0}, {50, 40}, f, dst);
    antialiased_resize(image, {1.5, 2.5, 70.25, 120.0}, {50, 40}, f, again);
    EXPECT_EQ(cv::norm(dst, again, cv::NORM_INF), 0);
  }
}

TEST(AntialiasedResize, NearestTakesThePixelUnderEachOutputCentre) {
  auto image = random_image(10, 12, 3);
  cv::Mat dst;
  antialiased_resize(image, whole(image), {4, 5}, resample_filter::nearest, dst);
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 4; ++x) {
      // centre x: (x + 0.5) * 12 / 4 = 1.5, 4.5, 7.5, 10.5; y: (y + 0.5) * 2 = 1, 3, 5, 7, 9
      EXPECT_EQ(dst.at<cv::Vec3b>(y, x), image.at<cv::Vec3b>(2 * y + 1, 3 * x + 1));
    }
  }
}

}  // namespace
}  // namespace conveyor
