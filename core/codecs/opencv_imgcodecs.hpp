#pragma once
/// OpenCV's image codecs (libopencv_imgcodecs), loaded the first time one is needed rather
/// than at start. imgcodecs brings GDAL, GDCM, Poppler and some 90 more libraries whose
/// relocated data cost every process that maps them ~18 MiB of private memory (PSS; 37 MiB of
/// RSS): a node that decodes only JPEG and PNG, or serves a Python Dataset, never maps them.
/// The library is opened by the soname this build was configured with
/// (CONVEYOR_IMGCODECS_SONAME); a machine without it gets an error that names it, on the call
/// that needed it. Not in a lean build (CONVEYOR_LEAN), which has no imgcodecs. Thread-safe.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "conveyor/error.hpp"

namespace conveyor {

/// cv::imdecode(`size` bytes at `data`, `flags`): the image, empty when no decoder could read
/// the bytes (as cv::imdecode); an error when imgcodecs cannot be loaded or OpenCV throws.
expected<cv::Mat> opencv_imdecode(const std::uint8_t* data, std::size_t size, int flags);

/// cv::imencode(`extension`, `image`, `params`): the encoded bytes; an error when imgcodecs
/// cannot be loaded, OpenCV throws, or it cannot encode.
expected<std::vector<std::uint8_t>> opencv_imencode(const std::string& extension,
                                                    const cv::Mat& image,
                                                    const std::vector<int>& params);

}  // namespace conveyor
