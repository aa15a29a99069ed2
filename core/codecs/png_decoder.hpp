#pragma once
/// PNG decoding through libpng (no OpenCV imgcodecs, so it works in a lean build) into
/// host_arrays of shape [height, width, channels] (HWC), C order.
///
/// - 8-bit and lower: uint8. Gray of 1, 2 or 4 bits is scaled to 0..255, as libpng expands it.
/// - 16-bit: int32 holding the exact stored values 0..65535 (no scaling, no gamma): PIL's
///   convention for 16-bit PNGs (mode 'I'), and a dtype every framework has.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/host_array.hpp"

namespace conveyor {

/// Which channels decode_png gives.
enum class png_channels {
  /// As the file stores them: 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA). A palette
  /// expands to RGB, or to RGBA where the file has a transparency (tRNS) chunk. The single
  /// transparent colour a gray or RGB file may name adds no channel (as in PIL).
  keep,
  /// Always 3, RGB: gray is replicated, alpha dropped (not composited), as PIL's
  /// convert("RGB") does; what the image recipe's steps take.
  rgb,
};

struct png_options {
  png_channels channels = png_channels::keep;
  /// Images with more pixels are refused from their header, before anything is allocated
  /// (the same limit as JPEG's max_image_pixels).
  std::int64_t max_pixels = std::int64_t{1} << 28;
  /// Images whose decode would hold more bytes are refused from their header too, before
  /// anything is allocated: the array it gives (height x width x channels, 1 byte a sample,
  /// 4 for a 16-bit image's int32) and libpng's row pointers (8 bytes a row), the two buffers
  /// that grow with the image (libpng's own two row buffers besides are small). The pixel limit
  /// alone lets a 16-bit RGBA header ask for 4 GiB; 1 GiB still takes 2^28 pixels of 8-bit RGB.
  std::size_t max_bytes = std::size_t{1} << 30;
};

/// True when `data` starts with the PNG signature.
bool is_png(const std::uint8_t* data, std::size_t size) noexcept;

/// Decodes a whole PNG (interlaced or not; the first frame of an APNG). errc::decode_error
/// names what is wrong: not a PNG, truncated (the IEND chunk included), a damaged critical
/// chunk or compressed stream (libpng's own message), more than max_pixels pixels or a decode
/// of more than max_bytes bytes; the caller adds which part it was. Thread-safe: each call has its
/// own libpng state.
expected<host_array> decode_png(const std::uint8_t* data, std::size_t size,
                                const png_options& options = {});
inline expected<host_array> decode_png(const std::vector<std::uint8_t>& bytes,
                                       const png_options& options = {}) {
  return decode_png(bytes.data(), bytes.size(), options);
}

}  // namespace conveyor
