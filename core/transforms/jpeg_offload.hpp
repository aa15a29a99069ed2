#pragma once
/// A second JPEG decoder that the decode step may hand an image to: the GPU's (nvJPEG,
/// core/cuda/nvjpeg_offload.hpp). The transforms cannot link CUDA (the CUDA part links them),
/// so the decoder comes through a provider that a CUDA build installs before any chain is built
/// (api/resolve_fields.cpp); without one, decode.on = "gpu" is refused and "auto" decodes on
/// the CPU.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <opencv2/core/mat.hpp>

#include "conveyor/error.hpp"
#include "core/codecs/jpeg_region.hpp"

namespace conveyor {

/// What the decode step asks for: `region` of the JPEG decoded at 1/`reduce` of its size (the
/// coordinates of that reduced image, inside it; sizes round up as libjpeg's do).
struct offload_request {
  int width = 0;  ///< the JPEG's full size, from its header
  int height = 0;
  image_region region;
  int reduce = 1;  ///< 1, 2, 4 or 8
  /// decode.strict: a JPEG that breaks the standard (truncated, ...) is an error, not an image
  /// with what is missing filled in; a decoder that cannot tell declines strict requests.
  bool strict = true;
};

/// What a decoder answers when it does not fail.
struct offload_result {
  enum class outcome : std::uint8_t {
    decoded,   ///< `image` holds the requested region, HWC uint8 RGB of the region's size
    busy,      ///< every lane was busy: the caller decodes it (nothing is queued)
    declined,  ///< a JPEG it does not take (CMYK, too large, none of its backends reads it)
  };
  outcome what = outcome::declined;
  cv::Mat image;
};

/// Thread-safe: every preprocessor thread calls decode() at once.
class jpeg_offload {
 public:
  virtual ~jpeg_offload() = default;

  /// The requested region, or why the caller must decode it. An error: it failed on this
  /// JPEG, and the caller decodes it on the CPU, which names what is wrong with it, if
  /// anything: errc::decode_error where the JPEG is the cause (damaged, truncated under
  /// `strict`), errc::invalid_argument for a request outside the image, anything else
  /// (device_error, io_error) where the device is. Blocks the caller until the pixels are in
  /// host memory.
  virtual expected<offload_result> decode(const std::uint8_t* data, std::size_t size,
                                          const offload_request& request) = 0;

  /// For logs: "nvJPEG 13.0.1 on CUDA device 0 (4 lanes)".
  virtual std::string describe() const = 0;
};

/// Opens the decoder of CUDA device `device` with `lanes` JPEGs at once (the same one for every
/// chain of the process that asks for the same device). Errors say what is missing: the library
/// (where it looked), the device.
using jpeg_offload_provider =
    std::function<expected<std::shared_ptr<jpeg_offload>>(int device, int lanes)>;

/// Installs the provider (a CUDA build does, once, before chains are built). Thread-safe.
void set_jpeg_offload_provider(jpeg_offload_provider provider);

/// The provider's decoder for `device`; errc::not_found where none is installed ("this build
/// has no CUDA"). Thread-safe.
expected<std::shared_ptr<jpeg_offload>> open_jpeg_offload(int device, int lanes);

}  // namespace conveyor
