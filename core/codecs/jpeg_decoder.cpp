#include "core/codecs/jpeg_decoder.hpp"

#include <algorithm>
#include <new>
#include <string>

#include <turbojpeg.h>
#include <opencv2/imgproc.hpp>
#if !CONVEYOR_LEAN
#include <opencv2/imgcodecs.hpp>  // the IMREAD_ flags only: imgcodecs is loaded when needed

#include "core/codecs/opencv_imgcodecs.hpp"
#endif

namespace conveyor {
namespace {

/// The calling thread's TurboJPEG decompressor. Handles are not thread-safe and cost
/// allocations to create, so each thread keeps one, created on first use.
class tj_decompressor {
 public:
  tj_decompressor() = default;
  ~tj_decompressor() { discard(); }
  tj_decompressor(const tj_decompressor&) = delete;
  tj_decompressor& operator=(const tj_decompressor&) = delete;

  /// The handle, or null when TurboJPEG cannot create one (out of memory).
  tjhandle get() {
    if (handle_ == nullptr) {
      handle_ = tjInitDecompress();
    }
    return handle_;
  }

  /// Drops the handle after a failed call; the next get() makes a fresh one. libjpeg-turbo
  /// 2.1 leaves a handle whose header read failed in a state where the next header read,
  /// even of a good file, succeeds without a size.
  void discard() noexcept {
    if (handle_ != nullptr) {
      tjDestroy(handle_);
      handle_ = nullptr;
    }
  }

 private:
  tjhandle handle_ = nullptr;
};

tj_decompressor& thread_decompressor() {
  thread_local tj_decompressor decompressor;
  return decompressor;
}

error decode_failure(std::string why) {
  return error(errc::decode_error, std::move(why));
}

std::string tj_message(tjhandle handle) {
  return tjGetErrorStr2(handle);
}

struct jpeg_header {
  image_info size;
  int colorspace = TJCS_RGB;
};

expected<jpeg_header> read_jpeg_header(tj_decompressor& decompressor, const std::uint8_t* data,
                                       std::size_t size) {
  tjhandle handle = decompressor.get();
  if (handle == nullptr) {
    return decode_failure(std::string("cannot create a TurboJPEG decompressor: ") +
                          tjGetErrorStr2(nullptr));
  }
  jpeg_header header;
  int subsampling = 0;
  if (tjDecompressHeader3(handle, data, static_cast<unsigned long>(size), &header.size.width,
                          &header.size.height, &subsampling, &header.colorspace) != 0) {
    auto failure = decode_failure("unreadable JPEG header: " + tj_message(handle));
    decompressor.discard();
    return failure;
  }
  // A stream that ends before its frame header reads as "tables only": success, no size.
  if (header.size.width <= 0 || header.size.height <= 0) {
    decompressor.discard();
    return decode_failure("truncated or corrupt JPEG: no frame header");
  }
  return header;
}

expected<void> check_pixel_count(image_info size) {
  if (std::int64_t{size.width} * size.height > max_image_pixels) {
    return decode_failure("image too large: " + std::to_string(size.width) + "x" +
                          std::to_string(size.height) + " pixels, the limit is " +
                          std::to_string(max_image_pixels));
  }
  return {};
}

std::string scale_text(int num, int denom) {
  return std::to_string(num) + "/" + std::to_string(denom);
}

/// The num/denom factor, if this build of TurboJPEG supports it (libjpeg-turbo offers M/8).
expected<tjscalingfactor> scaling_factor(const decode_options& options) {
  std::string known;
  for (const auto& scale : jpeg_reduction_scales()) {
    if (scale.num == options.scale_num && scale.denom == options.scale_denom) {
      return tjscalingfactor{scale.num, scale.denom};
    }
    known += (known.empty() ? "" : ", ") + scale_text(scale.num, scale.denom);
  }
  return error(errc::invalid_argument, "decode scale must be one of " + known + " (got " +
                                           scale_text(options.scale_num, options.scale_denom) +
                                           ")");
}

image_info scale(image_info full, tjscalingfactor factor) {
  return {TJSCALED(full.width, factor), TJSCALED(full.height, factor)};
}

#if CONVEYOR_LEAN
/// A lean build has no OpenCV decoders (no imgcodecs): TurboJPEG's formats only.
expected<cv::Mat> decode_with_opencv(const std::uint8_t* /*data*/, std::size_t size,
                                     tjscalingfactor /*factor*/) {
  return decode_failure(
      "non-JPEG input (or a CMYK JPEG) needs a full build: this lean build "
      "(CONVEYOR_LEAN) decodes only JPEG, through TurboJPEG (" +
      std::to_string(size) + " bytes)");
}
#else
/// OpenCV's decoders, for what TurboJPEG does not take (PNG, BMP, CMYK JPEG, ...).
expected<cv::Mat> decode_with_opencv(const std::uint8_t* data, std::size_t size,
                                     tjscalingfactor factor) {
  // EXIF orientation is ignored, as on the TurboJPEG path and in torchvision's PIL loader.
  auto decoded = opencv_imdecode(data, size, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  if (!decoded) {
    return decoded.error();
  }
  const cv::Mat& bgr = *decoded;
  if (bgr.empty()) {
    return decode_failure("not an image, or a damaged one (no decoder could read these " +
                          std::to_string(size) + " bytes)");
  }
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  if (factor.num == factor.denom) {
    return rgb;
  }
  // Same rounding (up) as TurboJPEG's DCT scaling, so scaled_size holds for every format.
  image_info out = scale({rgb.cols, rgb.rows}, factor);
  cv::Mat reduced;
  cv::resize(rgb, reduced, cv::Size(out.width, out.height), 0, 0, cv::INTER_AREA);
  return reduced;
}
#endif

/// Why tjDecompress2 failed. A warning means libjpeg filled the damaged part with grey: in
/// strict mode that silently wrong image is an error too.
expected<void> decompress_failure(tjhandle handle, bool strict) {
  if (tjGetErrorCode(handle) != TJERR_WARNING) {
    return decode_failure("corrupt JPEG: " + tj_message(handle));
  }
  if (strict) {
    return decode_failure("truncated or corrupt JPEG: " + tj_message(handle));
  }
  return {};
}

expected<cv::Mat> decode_jpeg_once(const std::uint8_t* data, std::size_t size,
                                   tjscalingfactor factor, bool strict) {
  tj_decompressor& decompressor = thread_decompressor();
  auto header = read_jpeg_header(decompressor, data, size);
  if (!header) {
    return std::move(header).error();
  }
  if (header->colorspace == TJCS_CMYK || header->colorspace == TJCS_YCCK) {
    // libjpeg cannot convert CMYK to RGB; OpenCV converts it itself.
    return decode_with_opencv(data, size, factor);
  }
  if (auto ok = check_pixel_count(header->size); !ok) {
    return std::move(ok).error();
  }
  image_info out = scale(header->size, factor);
  cv::Mat image(out.height, out.width, CV_8UC3);
  // Stopping at the first warning saves decoding the rest of a file already known bad.
  int flags = strict ? TJFLAG_STOPONWARNING : 0;
  tjhandle handle = decompressor.get();
  if (tjDecompress2(handle, data, static_cast<unsigned long>(size), image.data, out.width,
                    static_cast<int>(image.step), out.height, TJPF_RGB, flags) != 0) {
    auto failure = decompress_failure(handle, strict);
    decompressor.discard();
    if (!failure) {
      return std::move(failure).error();
    }
  }
  return image;
}

bool ends_with_eoi(const std::uint8_t* data, std::size_t size) noexcept {
  return size >= 2 && data[size - 2] == 0xFF && data[size - 1] == 0xD9;
}

expected<cv::Mat> decode_jpeg(const std::uint8_t* data, std::size_t size, tjscalingfactor factor,
                              bool strict) {
  auto image = decode_jpeg_once(data, size, factor, strict);
  if (image || !strict || ends_with_eoi(data, size)) {
    return image;
  }
  // Files in the wild often lack only their end-of-image marker: every pixel is there, but
  // libjpeg warns of a premature end. Decoding again with the marker appended tells them from
  // real truncation, which still warns (a marker in the middle of the entropy-coded data).
  std::vector<std::uint8_t> completed(data, data + size);
  completed.push_back(0xFF);
  completed.push_back(0xD9);
  auto retry = decode_jpeg_once(completed.data(), completed.size(), factor, strict);
  return retry ? std::move(retry) : std::move(image);
}

}  // namespace

bool is_jpeg(const std::uint8_t* data, std::size_t size) noexcept {
  return size >= 2 && data[0] == 0xFF && data[1] == 0xD8;
}

const std::vector<scale_ratio>& jpeg_reduction_scales() {
  static const std::vector<scale_ratio> scales = [] {
    int count = 0;
    const tjscalingfactor* factors = tjGetScalingFactors(&count);
    std::vector<scale_ratio> out;
    for (int i = 0; factors != nullptr && i < count; ++i) {
      if (factors[i].num <= factors[i].denom) {
        out.push_back({factors[i].num, factors[i].denom});
      }
    }
    std::sort(out.begin(), out.end(), smaller_scale);
    return out;
  }();
  return scales;
}

const std::vector<scale_ratio>& jpeg_fast_reduction_scales() {
  static const std::vector<scale_ratio> scales = [] {
    std::vector<scale_ratio> out;
    for (const auto& scale : jpeg_reduction_scales()) {
      if (scale.num == 1) {
        out.push_back(scale);
      }
    }
    return out;
  }();
  return scales;
}

expected<image_info> scaled_size(image_info full, const decode_options& options) {
  auto factor = scaling_factor(options);
  if (!factor) {
    return std::move(factor).error();
  }
  return scale(full, *factor);
}

expected<image_info> probe_image(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return decode_failure("empty file (0 bytes)");
  }
  if (is_jpeg(data, size)) {
    auto header = read_jpeg_header(thread_decompressor(), data, size);
    if (!header) {
      return std::move(header).error();
    }
    return header->size;
  }
  auto image = decode_image(data, size);
  if (!image) {
    return std::move(image).error();
  }
  return image_info{image->cols, image->rows};
}

expected<cv::Mat> decode_image(const std::uint8_t* data, std::size_t size,
                               const decode_options& options) {
  if (size == 0) {
    return decode_failure("empty file (0 bytes)");
  }
  auto factor = scaling_factor(options);
  if (!factor) {
    return std::move(factor).error();
  }
  try {
    if (is_jpeg(data, size)) {
      return decode_jpeg(data, size, *factor, options.strict);
    }
    return decode_with_opencv(data, size, *factor);
  } catch (const cv::Exception& e) {
    return decode_failure(std::string("OpenCV: ") + e.what());
  } catch (const std::bad_alloc&) {
    return decode_failure("out of memory while decoding " + std::to_string(size) + " bytes");
  }
}

}  // namespace conveyor
