// The PNG decoder against PIL's own files and PIL's reading of them (written at test time on
// this machine), 16-bit colour against OpenCV's encoder, and damaged or hostile files.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "core/codecs/png_decoder.hpp"
#include "support/reference_files.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using bytes = std::vector<std::uint8_t>;

void expect_refused(const bytes& file, const std::string& why, const png_options& options = {}) {
  auto image = decode_png(file, options);
  ASSERT_FALSE(image) << "decoded " << describe(*image);
  EXPECT_EQ(image.error().code(), errc::decode_error);
  EXPECT_NE(image.error().message().find(why), std::string::npos) << image.error().message();
}

class PilFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::temp_dir>();
    status_ = testing::write_references("write_png_references.py", dir_->path());
  }
  static void TearDownTestSuite() { dir_.reset(); }
  void SetUp() override {
    if (status_ == 77) {
      GTEST_SKIP() << "NumPy or PIL is missing (Debian: python3-numpy python3-pil)";
    }
    ASSERT_EQ(status_, 0) << "write_png_references.py failed";
  }
  static bytes file(const std::string& name) { return testing::read_file(dir_->path() / name); }

  static std::unique_ptr<testing::temp_dir> dir_;
  static int status_;
};
std::unique_ptr<testing::temp_dir> PilFiles::dir_;
int PilFiles::status_ = -1;

TEST_F(PilFiles, EveryModeAndInterlacingDecodesToWhatPilReadsInBothChannelPolicies) {
  const auto cases = testing::read_manifest(dir_->path() / "manifest.txt");
  ASSERT_EQ(cases.size(), 20u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c[0]);
    png_options options;
    options.channels = c[2] == "rgb" ? png_channels::rgb : png_channels::keep;
    auto image = decode_png(file(c[1]), options);
    ASSERT_TRUE(image) << image.error().what();
    EXPECT_EQ(name_of(image->type), c[3]);
    ASSERT_EQ(image->rank, 3);
    for (int axis = 0; axis < 3; ++axis) {
      EXPECT_EQ(image->extent(axis), std::stoll(c[5 + static_cast<std::size_t>(axis)]));
    }
    const bytes expected = file(c[0] + ".raw");
    EXPECT_TRUE(
        std::equal(image->bytes.begin(), image->bytes.end(), expected.begin(), expected.end()));
  }
}

TEST_F(PilFiles, SixteenBitGrayKeepsTheExactValuesUpTo65535) {
  auto image = decode_png(file("gray16.png"));
  ASSERT_TRUE(image) << image.error().what();
  ASSERT_EQ(image->type, dtype::int32);
  const auto* v = image->data<std::int32_t>();
  EXPECT_EQ(std::vector<std::int32_t>(v, v + 4), (std::vector<std::int32_t>{0, 1, 65534, 65535}));
}

TEST_F(PilFiles, EveryTruncationIsAnErrorNeverAnOutOfBoundsRead) {
  const bytes whole = file("palette_alpha.png");
  for (std::size_t size = 0; size < whole.size(); size += 7) {
    auto part = std::make_unique<std::uint8_t[]>(size + 1);
    std::memcpy(part.get(), whole.data(), size);
    EXPECT_FALSE(decode_png(part.get(), size)) << size;
  }
  expect_refused(bytes(whole.begin(), whole.end() - 6), "truncated");
}

TEST_F(PilFiles, DamagedChunksAreErrorsWithLibpngsReason) {
  bytes header_crc = file("rgb.png");
  header_crc[29] ^= 0xff;  // the IHDR chunk's CRC
  expect_refused(header_crc, "CRC error");
  bytes rgb = file("rgb.png");
  bytes data = rgb;
  for (std::size_t i = 60; i < 90; ++i) {
    data[i] ^= 0x5a;  // inside the compressed IDAT data: its CRC, then zlib, object
  }
  EXPECT_FALSE(decode_png(data));
  bytes not_png = rgb;
  not_png[1] = 'J';
  expect_refused(not_png, "not a PNG file");
  expect_refused(bytes{}, "not a PNG file");
}

TEST_F(PilFiles, AbsurdSizesAreRefusedFromTheHeaderBeforeAllocating) {
  expect_refused(file("huge.png"), "100000x100000 has more than 268435456 pixels");
  png_options small;
  small.max_pixels = 100;
  expect_refused(file("rgb.png"), "37x23 has more than 100 pixels", small);
}

TEST_F(PilFiles, SixteenBitRgbaWithinThePixelLimitIsRefusedFromItsHeaderByItsBytes) {
  // 2^28 pixels, as many as max_pixels takes, but 4 GiB as int32: refused before any of it is
  // allocated (the file holds 64 bytes of data; a decode would fail only after allocating).
  expect_refused(file("rgba16_huge.png"),
                 "16384x16384 of 4 16-bit channels decodes to more than 1073741824 bytes "
                 "(262152 a row with its row pointer)");
}

/// A 16-bit PNG of `rows` x `columns` random pixels of `channels` channels, as OpenCV writes
/// it from `bgra` (BGR or BGRA).
bytes sixteen_bit_png(int rows, int columns, int channels, cv::Mat& bgra) {
  bgra = cv::Mat(rows, columns, CV_16UC(channels));
  cv::randu(bgra, cv::Scalar::all(0), cv::Scalar::all(65536));
  bgra.ptr<std::uint16_t>(0)[0] = 65535;
  bytes png;
  EXPECT_TRUE(cv::imencode(".png", bgra, png));
  return png;
}

TEST(PngDecoder, TheByteLimitCountsTheInt32ArrayAndTheRowPointers) {
  cv::Mat bgra;
  const bytes png = sixteen_bit_png(19, 31, 4, bgra);
  png_options exact;
  exact.max_bytes = 19 * 31 * 4 * sizeof(std::int32_t) + 19 * sizeof(void*);
  auto image = decode_png(png, exact);
  ASSERT_TRUE(image) << image.error().what();
  png_options under = exact;
  --under.max_bytes;
  expect_refused(png, "31x19 of 4 16-bit channels decodes to more than 9575 bytes", under);
}

TEST(PngDecoder, SixteenBitColourKeepsItsExactValues) {
  for (int channels : {3, 4}) {
    SCOPED_TRACE(channels);
    cv::Mat bgr;
    const bytes png = sixteen_bit_png(19, 31, channels, bgr);
    auto image = decode_png(png);
    ASSERT_TRUE(image) << image.error().what();
    ASSERT_EQ(describe(*image), "int32 [19, 31, " + std::to_string(channels) + "]");
    const auto* v = image->data<std::int32_t>();
    for (int y = 0; y < bgr.rows; ++y) {
      for (int x = 0; x < bgr.cols; ++x) {
        const auto* px = bgr.ptr<std::uint16_t>(y) + x * channels;
        const auto* out = v + (y * bgr.cols + x) * channels;
        ASSERT_EQ(out[0], px[2]);  // OpenCV holds BGR(A); PNG and the decoder RGB(A)
        ASSERT_EQ(out[1], px[1]);
        ASSERT_EQ(out[2], px[0]);
        if (channels == 4) {
          ASSERT_EQ(out[3], px[3]);
        }
      }
    }
  }
}

}  // namespace
}  // namespace conveyor
