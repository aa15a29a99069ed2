#pragma once
/// An interleaved RGB image shrunk by an integer factor on the GPU, each output pixel the
/// rounded mean of the k x k input pixels it covers (fewer at the right and bottom edges, where
/// the output's size rounds up as libjpeg's scaled sizes do). What the GPU's JPEG decoder makes
/// of a full-size decode to stand for the CPU's DCT-domain 1/2, 1/4 and 1/8 decodes (close, not
/// the same pixels: both low-pass, in different ways).

#include <cstddef>
#include <cstdint>

#include "conveyor/error.hpp"
#include "core/cuda/cuda_stream.hpp"

namespace conveyor::cuda {

/// A pitched HWC uint8 RGB image in device memory.
struct device_rgb {
  std::uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  std::size_t pitch = 0;  ///< bytes from one row to the next, >= 3 * width
};

/// The output size of `width` x `height` reduced by `factor`: each side rounded up. Pure.
constexpr int reduced_length(int length, int factor) noexcept {
  return (length + factor - 1) / factor;
}

/// Queues the reduction of `src` by `factor` (1..8) into `dst` on `stream` (dst's size must be
/// reduced_length of src's). Returns once launched; both must stay valid until the stream has
/// passed it. Makes the stream's device current for the launch. errc::invalid_argument for
/// sizes that do not match; the launch error names the device.
expected<void> launch_box_reduce(const device_rgb& src, const device_rgb& dst, int factor,
                                 const cuda_stream& stream);

}  // namespace conveyor::cuda
