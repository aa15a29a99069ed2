#pragma once
/// The arithmetic of normalize, one element at a time, shared by the CPU normalize step, the
/// CPU reference of a batch (core/transforms/normalize_batch.hpp) and the CUDA kernel
/// (core/cuda/normalize_kernel.cu), so that all three compute the same bits:
///
///   out = fma(float(v), alpha[c], beta[c]),  alpha = 1 / (255 stddev), beta = -mean / stddev,
///
/// with alpha and beta rounded to float once, as OpenCV's convertTo does, and a single rounding
/// in the fused multiply-add, as OpenCV's AVX2 path and CUDA's fmaf do. bfloat16 is the float
/// result rounded to nearest, ties to even. Compiles with g++ and nvcc, without CUDA headers.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/transforms/transform_spec.hpp"

#if defined(__CUDACC__)
#define CONVEYOR_HOST_DEVICE __host__ __device__
#else
#define CONVEYOR_HOST_DEVICE
#endif

namespace conveyor {

/// normalize as v * alpha[c] + beta[c] per RGB channel, in the float values applied. Plain C
/// arrays: the struct is a kernel argument.
struct normalize_coefficients {
  float alpha[3];
  float beta[3];
};

/// The coefficients of `spec` (already validated by make_step: finite, stddev != 0).
inline normalize_coefficients coefficients_of(const normalize_spec& spec) noexcept {
  normalize_coefficients k{};
  for (int c = 0; c < 3; ++c) {
    // (v / 255 - mean) / stddev == v * alpha + beta, computed in double and rounded once.
    k.alpha[c] = static_cast<float>(1.0 / (255.0 * spec.stddev[c]));
    k.beta[c] = static_cast<float>(-spec.mean[c] / spec.stddev[c]);
  }
  return k;
}

/// Where the channels of a uint8 image lie: planes one after another (CHW), or interleaved per
/// pixel (HWC, as decoders write them). Values are stable.
enum class pixel_layout : std::uint8_t { chw = 0, hwc = 1 };

/// A batch of `samples` uint8 images of channels x height x width, one after another, each in
/// `layout`. Normalisation writes it as samples x channels x height x width (NCHW).
struct uint8_batch_shape {
  int samples = 0;
  int channels = 0;
  int height = 0;
  int width = 0;
  pixel_layout layout = pixel_layout::chw;

  CONVEYOR_HOST_DEVICE std::size_t pixels() const noexcept {
    return static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  }
  CONVEYOR_HOST_DEVICE std::size_t sample_elements() const noexcept {
    return pixels() * static_cast<std::size_t>(channels);
  }
  CONVEYOR_HOST_DEVICE std::size_t elements() const noexcept {
    return sample_elements() * static_cast<std::size_t>(samples);
  }
};

/// The input offset of channel `c` of pixel `p` (row-major within the image) of sample `n`.
CONVEYOR_HOST_DEVICE inline std::size_t input_offset(const uint8_batch_shape& s, int n, int c,
                                                     std::size_t p) noexcept {
  auto sample = static_cast<std::size_t>(n) * s.sample_elements();
  auto channel = static_cast<std::size_t>(c);
  return s.layout == pixel_layout::chw
             ? sample + channel * s.pixels() + p
             : sample + p * static_cast<std::size_t>(s.channels) + channel;
}

/// The output offset (NCHW) of channel `c` of pixel `p` of sample `n`.
CONVEYOR_HOST_DEVICE inline std::size_t output_offset(const uint8_batch_shape& s, int n, int c,
                                                      std::size_t p) noexcept {
  return static_cast<std::size_t>(n) * s.sample_elements() +
         static_cast<std::size_t>(c) * s.pixels() + p;
}

/// One normalised element.
CONVEYOR_HOST_DEVICE inline float normalize_value(std::uint8_t v, const normalize_coefficients& k,
                                                  int c) noexcept {
  return fmaf(static_cast<float>(v), k.alpha[c], k.beta[c]);
}

/// The bits of the bfloat16 nearest to `f` (ties to even); NaN stays a quiet NaN.
CONVEYOR_HOST_DEVICE inline std::uint16_t bfloat16_bits(float f) noexcept {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  }
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

/// The float a bfloat16 stands for.
CONVEYOR_HOST_DEVICE inline float bfloat16_value(std::uint16_t bits) noexcept {
  std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
  float f = 0.0f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// Stores `v` as float32 or as bfloat16 bits: the two output element types of normalisation.
CONVEYOR_HOST_DEVICE inline void store_normalized(float* out, float v) noexcept {
  *out = v;
}
CONVEYOR_HOST_DEVICE inline void store_normalized(std::uint16_t* out, float v) noexcept {
  *out = bfloat16_bits(v);
}

}  // namespace conveyor
