#pragma once
/// Decoding only the part of a JPEG that a crop needs: the rows down to the crop's last (those
/// above it are skipped, their entropy data decoded but not the rest of their work) and the
/// columns of the crop's iMCU columns, through libjpeg-turbo's libjpeg API (scale_num/denom,
/// jpeg_crop_scanline, jpeg_skip_scanlines). The pixels are the very bytes decode_image gives
/// at the same scale (tested for every chroma subsampling): the column crop asks for one more
/// column on the left and two on the right, as the chroma upsampler treats the edge of a
/// cropped region as the image's edge.
///
/// A JPEG with a restart index (restart_index.hpp, written by conveyor-pack --restart) is
/// entropy-decoded from the MCU row above the region's first instead of from the image's
/// first: the same pixels (tested), without the Huffman decoding of the rows above.

#include <cstddef>
#include <cstdint>
#include <optional>

#include <opencv2/core/mat.hpp>

#include "conveyor/error.hpp"
#include "core/codecs/jpeg_decoder.hpp"

namespace conveyor {

/// A rectangle of an image, in pixels: [left, left + width) x [top, top + height).
struct image_region {
  int left = 0;
  int top = 0;
  int width = 0;
  int height = 0;
};

/// `region` of the JPEG `data` decoded at the options' scale (region in that scaled image's
/// coordinates, inside it): HWC uint8 RGB, `region`'s size. nullopt where a partial decode
/// cannot help, and the caller decodes in full: a progressive JPEG (its coefficients come in
/// several scans over the whole image), a CMYK one (TurboJPEG converts it, libjpeg does not).
/// Errors as decode_image (errc::decode_error naming what is wrong; strict: a warning of
/// libjpeg's, such as corrupt entropy data, in the rows decoded is an error). Damage below the
/// region is never read. Thread-safe.
expected<std::optional<cv::Mat>> decode_jpeg_region(const std::uint8_t* data, std::size_t size,
                                                    const decode_options& options,
                                                    image_region region);

}  // namespace conveyor
