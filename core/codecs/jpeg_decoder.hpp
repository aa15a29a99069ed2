#pragma once
/// Image decoding for the transform steps: JPEG through TurboJPEG (strict about damaged
/// files, optionally DCT-scaled), anything else OpenCV can read through cv::imdecode (not in a
/// lean build, CONVEYOR_LEAN: there other formats are errc::decode_error).
/// Output is always HWC uint8 RGB.

#include <cstddef>
#include <cstdint>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "conveyor/error.hpp"
#include "core/codecs/scale_ratio.hpp"

namespace conveyor {

struct image_info {
  int width = 0;
  int height = 0;
};

struct decode_options {
  /// Decode at scale_num/scale_denom of the size: 1/1, or one of jpeg_reduction_scales()
  /// (1/2, 1/4, 1/8, and with libjpeg-turbo every M/8). For JPEG this is a DCT-domain
  /// reduction, much cheaper than decoding in full and resizing; sizes round up.
  int scale_num = 1;
  int scale_denom = 1;
  /// A JPEG on which libjpeg warns (truncated, corrupt entropy data) is an error instead of
  /// an image whose damaged part is silently filled with grey. A JPEG that lacks only its
  /// end marker is complete and decodes. Applies to the TurboJPEG path: OpenCV's decoders
  /// (other formats, CMYK JPEG) cannot report such damage.
  bool strict = true;
};

/// JPEGs with more pixels than this are refused before any memory is allocated: a damaged or
/// hostile header must not make a worker allocate gigabytes. (OpenCV's decoders apply their
/// own limit, 2^30 pixels by default.)
inline constexpr std::int64_t max_image_pixels = std::int64_t{1} << 28;

/// True when `data` starts with a JPEG start-of-image marker.
bool is_jpeg(const std::uint8_t* data, std::size_t size) noexcept;

/// The size of the image, from the JPEG header alone (nothing is decoded). Other formats are
/// decoded in full to learn their size, which costs as much as decode_image.
/// errc::decode_error says why when the bytes are not a readable image.
/// Thread-safe: each thread uses its own TurboJPEG handle.
expected<image_info> probe_image(const std::uint8_t* data, std::size_t size);

/// The reductions (num/denom <= 1) this build of TurboJPEG decodes, smallest first; 1/1 last.
/// Thread-safe.
const std::vector<scale_ratio>& jpeg_reduction_scales();

/// Those of jpeg_reduction_scales() that decode faster than 1/1: 1/8, 1/4 and 1/2, which
/// libjpeg-turbo decodes with dedicated reduced IDCTs. Its other M/8 (3/8, 5/8, 3/4, 7/8) run
/// generic kernels without SIMD and measure as slow as a full decode or up to 3x slower
/// (bench/results/scaled_decode.md). Smallest first; 1/1 last. Thread-safe.
const std::vector<scale_ratio>& jpeg_fast_reduction_scales();

/// The size decode_image gives for an image of size `full` at the options' scale.
/// errc::invalid_argument when the scale is not one of jpeg_reduction_scales().
expected<image_info> scaled_size(image_info full, const decode_options& options);

/// Decodes to HWC uint8 RGB (grey and CMYK images are converted). errc::decode_error when
/// the bytes are empty, not an image, a truncated or corrupt JPEG (in strict mode) or too big,
/// with a message that says which; errc::invalid_argument for an unsupported scale. The caller
/// adds which sample it was. Thread-safe: each thread uses its own TurboJPEG handle.
expected<cv::Mat> decode_image(const std::uint8_t* data, std::size_t size,
                               const decode_options& options = {});

inline expected<image_info> probe_image(const std::vector<std::uint8_t>& bytes) {
  return probe_image(bytes.data(), bytes.size());
}
inline expected<cv::Mat> decode_image(const std::vector<std::uint8_t>& bytes,
                                      const decode_options& options = {}) {
  return decode_image(bytes.data(), bytes.size(), options);
}

}  // namespace conveyor
