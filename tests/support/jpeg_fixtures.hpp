#pragma once
/// JPEGs for the decoder tests: textured photo-like images encoded by TurboJPEG with a chosen
/// chroma subsampling (tests that include this link PkgConfig::TURBOJPEG).

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include <turbojpeg.h>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/jpeg_region.hpp"

namespace conveyor::test {

/// A textured photo-like image, `w` x `h`, drawn from `seed`.
inline cv::Mat photo(int w, int h, std::uint32_t seed) {
  std::mt19937 rng(seed);
  cv::Mat img(h, w, CV_8UC3);
  cv::randu(img, 0, 255);
  cv::GaussianBlur(img, img, cv::Size(7, 7), 2);
  for (int i = 0; i < 20; ++i) {
    cv::rectangle(img,
                  cv::Rect(static_cast<int>(rng() % static_cast<std::uint32_t>(w)),
                           static_cast<int>(rng() % static_cast<std::uint32_t>(h)),
                           50 + static_cast<int>(rng() % 200), 50 + static_cast<int>(rng() % 200)),
                  cv::Scalar(rng() % 255, rng() % 255, rng() % 255), cv::FILLED);
  }
  return img;
}

/// The JPEG of `img` (RGB) with TurboJPEG's `subsampling`, and `flags` (e.g. progressive).
inline std::vector<std::uint8_t> encode(const cv::Mat& img, int subsampling, int flags = 0) {
  tjhandle h = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(h, img.data, img.cols, static_cast<int>(img.step), img.rows, TJPF_RGB, &out,
                        &size, subsampling, 90, flags),
            0);
  std::vector<std::uint8_t> bytes(out, out + size);
  tjFree(out);
  tjDestroy(h);
  return bytes;
}

/// Decode options at the scale 1/denom.
inline decode_options at_scale(int denom) {
  decode_options o;
  o.scale_denom = denom;
  return o;
}

/// Region number `trial` of a `cols` x `rows` image: 0 the top left corner, 1 the bottom right
/// corner, 2 everything, 3 the last row alone, then random regions drawn from `rng`.
inline image_region test_region(std::mt19937& rng, int trial, int cols, int rows) {
  int x0 = static_cast<int>(rng() % static_cast<std::uint32_t>(cols));
  int y0 = static_cast<int>(rng() % static_cast<std::uint32_t>(rows));
  int x1 = x0 + 1 + static_cast<int>(rng() % static_cast<std::uint32_t>(cols - x0));
  int y1 = y0 + 1 + static_cast<int>(rng() % static_cast<std::uint32_t>(rows - y0));
  if (trial == 0) {
    x0 = y0 = 0;
  } else if (trial == 1) {
    x1 = cols;
    y1 = rows;
  } else if (trial == 2) {
    x0 = y0 = 0;
    x1 = cols;
    y1 = rows;
  } else if (trial == 3) {
    y0 = rows - 1;
    y1 = rows;
  }
  return {x0, y0, x1 - x0, y1 - y0};
}

/// Every chroma subsampling TurboJPEG writes.
constexpr int subsamplings[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420,
                                TJSAMP_440, TJSAMP_411, TJSAMP_GRAY};

}  // namespace conveyor::test
