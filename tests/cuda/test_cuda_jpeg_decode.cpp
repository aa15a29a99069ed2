// The GPU's JPEG decoder (core/cuda/nvjpeg_offload.hpp) against the CPU's decode of the same
// JPEGs: whole images, regions at 1/1 and at the reduced scales (the GPU's box reduction
// standing for the CPU's DCT scaling: close, not equal; the PSNRs are printed for the
// record), grey and progressive JPEGs (decoded or declined, never wrong), damaged and
// truncated bytes (an error or a decline under strict, and the decoder stays usable), and more
// callers than lanes (the rest are answered busy at once). The box reduction itself is held bit for
// bit against a CPU reference, and nvJPEG's loader names what it could not load. Needs a GPU and
// nvJPEG (CONVEYOR_NVJPEG, or on the loader's path); without nvJPEG the decoder tests skip saying
// so, also on the GPU machine (the bundle's run-figures reports whether it found one).
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <thread>
#include <vector>

#include <opencv2/core.hpp>

#include "../support/jpeg_fixtures.hpp"
#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/jpeg_region.hpp"
#include "core/cuda/box_reduce_kernel.hpp"
#include "core/cuda/cuda_buffer.hpp"
#include "core/cuda/cuda_stream.hpp"
#include "core/cuda/nvjpeg_library.hpp"
#include "core/cuda/nvjpeg_offload.hpp"
#include "cuda_fixture.hpp"

namespace conveyor::cuda {
namespace {

using testing::cuda_test;
using testing::to_host;

TEST(NvjpegLibrary, AMissingLibraryIsNamedAndSoIsOneWithoutItsEntryPoints) {
  auto missing = load_nvjpeg_from({"/nonexistent/libnvjpeg.so.13"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), errc::not_found);
  EXPECT_NE(missing.error().message().find("/nonexistent/libnvjpeg.so.13"), std::string::npos);
  EXPECT_NE(missing.error().message().find("CONVEYOR_NVJPEG"), std::string::npos);
  // A library without nvJPEG's entry points is passed over for the next candidate.
  auto other = load_nvjpeg_from({"libm.so.6", "/nonexistent/libnvjpeg.so.12"});
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code(), errc::not_found);
  EXPECT_NE(other.error().message().find("libm.so.6, /nonexistent/libnvjpeg.so.12"),
            std::string::npos)
      << other.error().message();
  auto only = load_nvjpeg_from({"libm.so.6"});
  ASSERT_FALSE(only);
  EXPECT_NE(only.error().message().find("libm.so.6 has no nvjpegGetProperty"), std::string::npos)
      << only.error().message();
}

TEST(NvjpegLibrary, TheCandidatesStartWithTheNamedFile) {
  ::setenv("CONVEYOR_NVJPEG", "/opt/x/libnvjpeg.so.13", 1);
  auto c = nvjpeg_candidates();
  ::unsetenv("CONVEYOR_NVJPEG");
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front(), "/opt/x/libnvjpeg.so.13");
  EXPECT_EQ(c[1], "libnvjpeg.so.13");
}

/// The CPU's reduction of `image` by `k`: what box_reduce_kernel must give, byte for byte.
cv::Mat reduced_on_cpu(const cv::Mat& image, int k) {
  cv::Mat out(reduced_length(image.rows, k), reduced_length(image.cols, k), CV_8UC3);
  for (int y = 0; y < out.rows; ++y) {
    for (int x = 0; x < out.cols; ++x) {
      unsigned sum[3] = {0, 0, 0};
      unsigned n = 0;
      for (int sy = y * k; sy < std::min((y + 1) * k, image.rows); ++sy) {
        for (int sx = x * k; sx < std::min((x + 1) * k, image.cols); ++sx) {
          const auto& p = image.at<cv::Vec3b>(sy, sx);
          sum[0] += p[0];
          sum[1] += p[1];
          sum[2] += p[2];
          ++n;
        }
      }
      for (int c = 0; c < 3; ++c) {
        out.at<cv::Vec3b>(y, x)[c] = static_cast<std::uint8_t>((sum[c] + n / 2) / n);
      }
    }
  }
  return out;
}

using BoxReduce = cuda_test;

TEST_F(BoxReduce, EachOutputPixelIsTheRoundedMeanOfItsBlockEdgesIncluded) {
  cv::Mat image = test::photo(203, 117, 5);  // sides that no factor divides
  auto stream = cuda_stream::create(device_);
  ASSERT_TRUE(stream);
  const std::size_t pitch = 3 * 203 + 13;  // a pitch wider than the row
  auto src = device_buffer::allocate(device_, pitch * 117);
  ASSERT_TRUE(src);
  ASSERT_EQ(cudaMemcpy2D(src->data(), pitch, image.data, image.step, 3 * 203, 117,
                         cudaMemcpyHostToDevice),
            cudaSuccess);
  for (int k : {1, 2, 3, 4, 8}) {
    cv::Mat expected = reduced_on_cpu(image, k);
    const std::size_t out_bytes = expected.total() * 3;
    auto dst = device_buffer::allocate(device_, out_bytes);
    ASSERT_TRUE(dst);
    device_rgb in{src->data(), 203, 117, pitch};
    device_rgb out{dst->data(), expected.cols, expected.rows, 3 * std::size_t(expected.cols)};
    ASSERT_TRUE(launch_box_reduce(in, out, k, *stream));
    ASSERT_TRUE(stream->synchronize());
    auto got = to_host(dst->data(), out_bytes);
    EXPECT_EQ(std::memcmp(got.data(), expected.data, out_bytes), 0) << "factor " << k;
  }
  device_rgb bad{src->data(), 203, 117, pitch};
  EXPECT_FALSE(launch_box_reduce(bad, bad, 2, *stream));  // not the reduced size
}

class NvjpegOffload : public cuda_test {
 protected:
  void SetUp() override {
    cuda_test::SetUp();
    if (HasFatalFailure() || IsSkipped()) {
      return;
    }
    auto library = load_nvjpeg();
    if (!library) {
      GTEST_SKIP() << library.error().message();
    }
    auto opened = nvjpeg_offload::open(device_, 2);
    ASSERT_TRUE(opened) << opened.error().what();
    offload_ = std::move(*opened);
  }

  /// The GPU's pixels for `request` of `jpeg`, and the CPU's (its region decode at the scale).
  std::pair<cv::Mat, cv::Mat> both(const std::vector<std::uint8_t>& jpeg,
                                   const offload_request& request) {
    return both(*offload_, jpeg, request);
  }
  static std::pair<cv::Mat, cv::Mat> both(nvjpeg_offload& offload,
                                          const std::vector<std::uint8_t>& jpeg,
                                          const offload_request& request) {
    auto gpu = offload.decode(jpeg.data(), jpeg.size(), request);
    EXPECT_TRUE(gpu) << gpu.error().what();
    auto cpu = decode_jpeg_region(jpeg.data(), jpeg.size(), test::at_scale(request.reduce),
                                  request.region);
    EXPECT_TRUE(cpu && *cpu);
    if (!gpu || gpu->what != offload_result::outcome::decoded || !cpu || !*cpu) {
      return {};
    }
    return {std::move(gpu->image), std::move(**cpu)};
  }

  static offload_request whole(const std::vector<std::uint8_t>& jpeg, int reduce = 1) {
    auto info = probe_image(jpeg);
    EXPECT_TRUE(info);
    offload_request r;
    r.width = info->width;
    r.height = info->height;
    r.reduce = reduce;
    r.region = {0, 0, reduced_length(r.width, reduce), reduced_length(r.height, reduce)};
    return r;
  }

  /// Regions of a 2400x1600 JPEG at every scale through `offload`: the CPU's size, close to its
  /// pixels.
  static void expect_regions_like_the_cpus(nvjpeg_offload& offload, const std::string& label) {
    auto jpeg = test::encode(test::photo(2400, 1600, 9), TJSAMP_420);
    std::mt19937 rng(3);
    for (int reduce : {1, 2, 4, 8}) {
      for (int trial = 0; trial < 6; ++trial) {
        auto r = whole(jpeg, reduce);
        r.region = test::test_region(rng, trial, r.region.width, r.region.height);
        auto [gpu, cpu] = both(offload, jpeg, r);
        ASSERT_FALSE(gpu.empty()) << label;
        ASSERT_EQ(gpu.cols, r.region.width);
        ASSERT_EQ(gpu.rows, r.region.height);
        double psnr = cv::PSNR(gpu, cpu);
        if (trial == 2) {
          std::cout << "[ figures  ] " << label << " 1/" << reduce << ": PSNR " << psnr << " dB\n";
        }
        EXPECT_GT(psnr, reduce == 1 ? 30.0 : 24.0)
            << label << " 1/" << reduce << " trial " << trial;
      }
    }
  }

  std::shared_ptr<nvjpeg_offload> offload_;
};

TEST_F(NvjpegOffload, WholeImagesAreTheCpusPixelsWithinTheIdctsDifference) {
  std::uint32_t seed = 1;
  for (int subsampling : {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_GRAY}) {
    auto jpeg = test::encode(test::photo(1000, 750, seed++), subsampling);
    auto [gpu, cpu] = both(jpeg, whole(jpeg));
    ASSERT_FALSE(gpu.empty()) << "subsampling " << subsampling;
    ASSERT_EQ(gpu.size(), cpu.size());
    double psnr = cv::PSNR(gpu, cpu);
    std::cout << "[ figures  ] subsampling " << subsampling << ": PSNR " << psnr << " dB\n";
    EXPECT_GT(psnr, 30.0) << "subsampling " << subsampling;
  }
}

TEST_F(NvjpegOffload, RegionsAtEveryScaleHaveTheCpusSizeAndCloseToItsPixels) {
  expect_regions_like_the_cpus(*offload_, "default backends");
}

// Each backend alone (CONVEYOR_NVJPEG_BACKENDS), the JPEG engines too, which decode the whole
// image for a region: the region is cut from it on the GPU.
TEST_F(NvjpegOffload, EachBackendAloneDecodesRegionsLikeTheCpu) {
  int opened = 0;
  for (const char* name : {"HARDWARE", "GPU_HYBRID", "HYBRID"}) {
    ::setenv("CONVEYOR_NVJPEG_BACKENDS", name, 1);
    auto alone = nvjpeg_offload::open(device_, 1);
    ::unsetenv("CONVEYOR_NVJPEG_BACKENDS");
    if (!alone) {  // this GPU or nvJPEG lacks it (no JPEG engines: not an H100)
      std::cout << "[ figures  ] " << name << ": " << alone.error().message() << "\n";
      continue;
    }
    ++opened;
    expect_regions_like_the_cpus(**alone, name);
  }
  EXPECT_GE(opened, 1);
}

TEST(NvjpegBackends, TheVariableNamesBackendsInItsOrderAndAnUnknownOneIsAnError) {
  auto all = nvjpeg_backends_named(nullptr);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_STREQ((*all)[0].name, "HARDWARE");
  EXPECT_EQ((*all)[0].kind, nvjpeg::hardware);
  EXPECT_EQ(nvjpeg_backends_named("")->size(), 3u);
  auto two = nvjpeg_backends_named("HYBRID,GPU_HYBRID");
  ASSERT_TRUE(two);
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].kind, nvjpeg::hybrid);
  EXPECT_EQ((*two)[1].kind, nvjpeg::gpu_hybrid);
  auto twice = nvjpeg_backends_named("HYBRID,GPU_HYBRID,HYBRID");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message().find("\"HYBRID\" is named twice"), std::string::npos)
      << twice.error().message();
  for (const char* bad : {"hardware", "HARDWARE,,HYBRID", "HYBRID,HYBRID", "HARDWARE,"}) {
    auto e = nvjpeg_backends_named(bad);
    ASSERT_FALSE(e) << bad;
    EXPECT_EQ(e.error().code(), errc::invalid_argument);
    EXPECT_NE(e.error().message().find(std::string("CONVEYOR_NVJPEG_BACKENDS=") + bad),
              std::string::npos)
        << e.error().message();
  }
}

TEST_F(NvjpegOffload, ProgressiveJpegsAreDecodedOrDeclinedNeverWrong) {
  auto jpeg = test::encode(test::photo(800, 600, 4), TJSAMP_420, TJFLAG_PROGRESSIVE);
  auto r = whole(jpeg);
  auto gpu = offload_->decode(jpeg.data(), jpeg.size(), r);
  ASSERT_TRUE(gpu) << gpu.error().what();
  EXPECT_NE(gpu->what, offload_result::outcome::busy);
  if (gpu->what == offload_result::outcome::decoded) {
    auto cpu = decode_image(jpeg);
    ASSERT_TRUE(cpu);
    EXPECT_GT(cv::PSNR(gpu->image, *cpu), 30.0);
  }
}

TEST_F(NvjpegOffload, DamagedBytesAreAnErrorOrADeclineAndTheDecoderStaysUsable) {
  auto jpeg = test::encode(test::photo(640, 480, 6), TJSAMP_420);
  auto r = whole(jpeg);
  std::vector<std::uint8_t> garbage(jpeg.size(), 0x5a);
  garbage[0] = 0xff;
  garbage[1] = 0xd8;
  auto bad = offload_->decode(garbage.data(), garbage.size(), r);
  EXPECT_TRUE(!bad || bad->what != offload_result::outcome::decoded);
  // Truncated: strict (the default) never gives an image with what is missing filled in.
  std::vector<std::uint8_t> cut(jpeg.begin(), jpeg.begin() + static_cast<long>(jpeg.size() / 3));
  auto truncated = offload_->decode(cut.data(), cut.size(), r);
  EXPECT_TRUE(!truncated || truncated->what != offload_result::outcome::decoded);
  offload_request lenient = r;
  lenient.strict = false;
  (void)offload_->decode(cut.data(), cut.size(), lenient);  // may fill in what is missing
  auto [gpu, cpu] = both(jpeg, r);
  ASSERT_FALSE(gpu.empty());
  EXPECT_GT(cv::PSNR(gpu, cpu), 30.0);
  offload_request outside = r;
  outside.region.width += 1;
  auto refused = offload_->decode(jpeg.data(), jpeg.size(), outside);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), errc::invalid_argument);
}

TEST_F(NvjpegOffload, CallersBeyondTheLanesAreAnsweredBusyAtOnceAndTheRestDecodeRight) {
  auto jpeg = test::encode(test::photo(1600, 1200, 8), TJSAMP_420);
  auto r = whole(jpeg, 2);
  auto cpu = decode_image(jpeg, test::at_scale(2));
  ASSERT_TRUE(cpu);
  std::atomic<int> decoded{0};
  std::atomic<int> declined{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        auto got = offload_->decode(jpeg.data(), jpeg.size(), r);
        if (!got || got->what == offload_result::outcome::declined) {
          ++wrong;
        } else if (got->what == offload_result::outcome::busy) {
          ++declined;
        } else {
          (cv::PSNR(got->image, *cpu) > 24.0 ? decoded : wrong) += 1;
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  std::cout << "[ figures  ] 8 threads, 2 lanes: " << decoded << " decoded, " << declined
            << " found every lane busy\n";
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(decoded.load(), 0);
  EXPECT_EQ(decoded + declined, 80);
}

}  // namespace
}  // namespace conveyor::cuda
