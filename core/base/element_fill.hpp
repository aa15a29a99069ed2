#pragma once
/// Fills memory with a value of any dtype (a padded batch's fill): `value` converted as a
/// cast to the element type would, float16 and bfloat16 rounded to nearest even. Thread-safe.

#include <cstddef>
#include <cstdint>

#include "conveyor/dtype.hpp"

namespace conveyor {

/// Writes `count` elements of `type`, each `value` converted, at `dest`.
void fill_elements(std::uint8_t* dest, std::size_t count, dtype type, double value);

/// The IEEE binary16 bits of `value` (rounded to nearest even; overflow to infinity).
std::uint16_t float16_bits(float value) noexcept;
/// The bfloat16 bits of `value` (rounded to nearest even; NaN stays NaN).
std::uint16_t bfloat16_bits(float value) noexcept;

}  // namespace conveyor
