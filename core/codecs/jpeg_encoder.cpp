#include "core/codecs/jpeg_encoder.hpp"

#include <string>

#include <opencv2/core.hpp>
#if CONVEYOR_LEAN
#include <turbojpeg.h>

#include <memory>
#else
#include <opencv2/imgcodecs.hpp>  // the IMWRITE_ flags only: imgcodecs is loaded when needed

#include "core/codecs/opencv_imgcodecs.hpp"
#endif

namespace conveyor {
namespace {

#if CONVEYOR_LEAN
expected<std::vector<std::uint8_t>> encode(const cv::Mat& bgr, int quality) {
  std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitCompress(), &tjDestroy);
  if (!handle) {
    return error{errc::io_error,
                 std::string("cannot create a TurboJPEG compressor: ") + tjGetErrorStr2(nullptr)};
  }
  unsigned char* out = nullptr;
  unsigned long size = 0;
  int failed = tjCompress2(handle.get(), bgr.data, bgr.cols, static_cast<int>(bgr.step), bgr.rows,
                           TJPF_BGR, &out, &size, TJSAMP_420, quality, 0);
  std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(out, &tjFree);
  if (failed != 0) {
    return error{errc::io_error,
                 std::string("TurboJPEG cannot encode: ") + tjGetErrorStr2(handle.get())};
  }
  return std::vector<std::uint8_t>(out, out + size);
}
#else
expected<std::vector<std::uint8_t>> encode(const cv::Mat& bgr, int quality) {
  return opencv_imencode(".jpg", bgr, {cv::IMWRITE_JPEG_QUALITY, quality});
}
#endif

}  // namespace

expected<std::vector<std::uint8_t>> encode_jpeg(const cv::Mat& bgr, int quality) {
  if (bgr.type() != CV_8UC3 || bgr.empty()) {
    return error{errc::invalid_argument,
                 "encode_jpeg needs a non-empty 8-bit 3-channel image, got " +
                     cv::typeToString(bgr.type()) + " " + std::to_string(bgr.cols) + "x" +
                     std::to_string(bgr.rows)};
  }
  if (quality < 1 || quality > 100) {
    return error{errc::invalid_argument,
                 "JPEG quality must be in 1..100 (got " + std::to_string(quality) + ")"};
  }
  try {
    return encode(bgr, quality);
  } catch (const cv::Exception& e) {
    return error{errc::io_error, std::string("OpenCV: ") + e.what()};
  }
}

}  // namespace conveyor
