#pragma once
/// Parameter checks shared by the step factories: each failure is an errc::invalid_argument
/// "<op>: <param> must ... (got ...)" so that a configuration error names what to fix.

#include <array>
#include <initializer_list>
#include <string>
#include <string_view>

#include "conveyor/error.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor {

/// errc::invalid_argument "<op>: <what>".
error invalid_spec(std::string_view op, std::string_view what);

/// `value` in the shortest form that reads back the same ("0.08", not "0.080000").
std::string format_number(double value);

expected<void> require_positive(std::string_view op, std::string_view param, int value);

/// 0 <= p <= 1.
expected<void> require_probability(std::string_view op, std::string_view param, double p);

/// A finite, positive, ordered [min, max] range.
expected<void> require_range(std::string_view op, std::string_view param,
                             const std::array<double, 2>& range);

/// `interp` is one of the enum's values (not a cast from outside data).
expected<void> require_interpolation(std::string_view op, interpolation interp);

/// The first failure among `checks`, or success.
expected<void> first_failure(std::initializer_list<expected<void>> checks);

}  // namespace conveyor
