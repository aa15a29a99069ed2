#pragma once
/// The element types of Conveyor's tensors, and how they map onto a framework's.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace conveyor {

/// Element type of a tensor. Values are stable: they may travel as integers. Host tensors hold
/// uint8 or float32; bfloat16 is what normalisation on the GPU may write into a device batch.
enum class dtype : std::uint8_t { uint8 = 0, float32 = 1, bfloat16 = 2 };

/// Bytes per element of `type`.
constexpr std::size_t size_of(dtype type) noexcept {
  switch (type) {
    case dtype::uint8:
      return 1;
    case dtype::float32:
      return 4;
    case dtype::bfloat16:
      return 2;
  }
  return 0;
}

/// The name of `type` as the configuration, NumPy (except bfloat16) and PyTorch spell it:
/// "uint8", "float32", "bfloat16" (so `getattr(torch, name_of(t))` in Python).
constexpr std::string_view name_of(dtype type) noexcept {
  switch (type) {
    case dtype::uint8:
      return "uint8";
    case dtype::float32:
      return "float32";
    case dtype::bfloat16:
      return "bfloat16";
  }
  return "unknown";
}

/// `type` as a DLPack data type (the exchange format of PyTorch, JAX, CuPy, TensorFlow):
/// type code (kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4), bits and lanes. With libtorch,
/// `at::toScalarType(DLDataType{t.code, t.bits, t.lanes})` (ATen/DLConvertor.h) maps it, no
/// table of your own needed (README: "Use it from libtorch").
struct dlpack_dtype {
  std::uint8_t code = 0;
  std::uint8_t bits = 0;
  std::uint16_t lanes = 1;
};
constexpr dlpack_dtype to_dlpack(dtype type) noexcept {
  switch (type) {
    case dtype::uint8:
      return {1, 8, 1};
    case dtype::float32:
      return {2, 32, 1};
    case dtype::bfloat16:
      return {4, 16, 1};
  }
  return {};
}

}  // namespace conveyor
