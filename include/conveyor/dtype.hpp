#pragma once
/// The element types of Conveyor's tensors, and how they map onto a framework's.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace conveyor {

/// Element type of a tensor. Values are stable: they may travel as integers (the serving
/// protocol and slot headers carry them). Samples' fields hold any of them; bfloat16 is also
/// what normalisation on the GPU may write into a device batch.
enum class dtype : std::uint8_t {
  uint8 = 0,
  float32 = 1,
  bfloat16 = 2,
  int16 = 3,
  int32 = 4,
  int64 = 5,
  float16 = 6,
  float64 = 7,  ///< NumPy's default float, Python's float (a user's Python Dataset gives them)
  int8 = 8,
  bool_ = 9,  ///< one byte, 0 or 1 (NumPy's and torch's bool); named "bool"
};

/// Every dtype, in value order.
inline constexpr dtype all_dtypes[] = {
    dtype::uint8, dtype::float32, dtype::bfloat16, dtype::int16, dtype::int32,
    dtype::int64, dtype::float16, dtype::float64,  dtype::int8,  dtype::bool_};

/// Bytes per element of `type`.
constexpr std::size_t size_of(dtype type) noexcept {
  switch (type) {
    case dtype::uint8:
    case dtype::int8:
    case dtype::bool_:
      return 1;
    case dtype::int16:
    case dtype::float16:
    case dtype::bfloat16:
      return 2;
    case dtype::int32:
    case dtype::float32:
      return 4;
    case dtype::int64:
    case dtype::float64:
      return 8;
  }
  return 0;
}

/// The name of `type` as the configuration, NumPy (except bfloat16) and PyTorch spell it:
/// "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
/// "bool" (so
/// `getattr(torch, name_of(t))` in Python).
constexpr std::string_view name_of(dtype type) noexcept {
  switch (type) {
    case dtype::uint8:
      return "uint8";
    case dtype::float32:
      return "float32";
    case dtype::bfloat16:
      return "bfloat16";
    case dtype::int16:
      return "int16";
    case dtype::int32:
      return "int32";
    case dtype::int64:
      return "int64";
    case dtype::float16:
      return "float16";
    case dtype::float64:
      return "float64";
    case dtype::int8:
      return "int8";
    case dtype::bool_:
      return "bool";
  }
  return "unknown";
}

/// The dtype named `name` (as name_of spells it), if there is one.
constexpr std::optional<dtype> dtype_named(std::string_view name) noexcept {
  for (auto t : all_dtypes) {
    if (name_of(t) == name) {
      return t;
    }
  }
  return std::nullopt;
}

/// The dtype whose wire value is `value`, if it is one (a value read from outside bytes).
constexpr std::optional<dtype> dtype_of_value(std::uint8_t value) noexcept {
  for (auto t : all_dtypes) {
    if (static_cast<std::uint8_t>(t) == value) {
      return t;
    }
  }
  return std::nullopt;
}

/// `type` as a DLPack data type (the exchange format of PyTorch, JAX, CuPy, TensorFlow):
/// type code (kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6), bits and
/// lanes. With
/// libtorch, `at::toScalarType(DLDataType{t.code, t.bits, t.lanes})` (ATen/DLConvertor.h) maps
/// it, no table of your own needed (README: "Use it from libtorch").
struct dlpack_dtype {
  std::uint8_t code = 0;
  std::uint8_t bits = 0;
  std::uint16_t lanes = 1;
};
constexpr dlpack_dtype to_dlpack(dtype type) noexcept {
  const auto bits = static_cast<std::uint8_t>(size_of(type) * 8);
  switch (type) {
    case dtype::uint8:
      return {1, bits, 1};
    case dtype::int8:
    case dtype::int16:
    case dtype::int32:
    case dtype::int64:
      return {0, bits, 1};
    case dtype::float16:
    case dtype::float32:
    case dtype::float64:
      return {2, bits, 1};
    case dtype::bool_:
      return {6, bits, 1};
    case dtype::bfloat16:
      return {4, bits, 1};
  }
  return {};
}

}  // namespace conveyor
