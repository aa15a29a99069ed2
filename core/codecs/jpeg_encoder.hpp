#pragma once
/// JPEG encoding, for the synthetic datasets and test fixtures: OpenCV's encoder in a full
/// build (the bytes the datasets have always had), TurboJPEG's in a lean build (CONVEYOR_LEAN,
/// no OpenCV imgcodecs). Both write baseline 4:2:0 JPEG at the given quality.

#include <cstdint>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "conveyor/error.hpp"

namespace conveyor {

/// The JPEG bytes of an 8-bit 3-channel BGR image at `quality` (1..100). errc::invalid_argument
/// for another image type; errc::io_error when the encoder fails. Thread-safe.
expected<std::vector<std::uint8_t>> encode_jpeg(const cv::Mat& bgr, int quality);

}  // namespace conveyor
