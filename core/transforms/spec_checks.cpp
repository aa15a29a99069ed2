#include "core/transforms/spec_checks.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <opencv2/imgproc.hpp>

namespace conveyor {

error invalid_spec(std::string_view op, std::string_view what) {
  std::string message(op);
  message += ": ";
  message += what;
  return error(errc::invalid_argument, std::move(message));
}

std::string format_number(double value) {
  char text[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) {
      break;
    }
  }
  return text;
}

expected<void> require_positive(std::string_view op, std::string_view param, int value) {
  if (value > 0) {
    return {};
  }
  return invalid_spec(op, std::string(param) + " must be > 0 (got " + std::to_string(value) + ")");
}

expected<void> require_probability(std::string_view op, std::string_view param, double p) {
  if (p >= 0.0 && p <= 1.0) {
    return {};
  }
  return invalid_spec(op, std::string(param) + " must be in [0, 1] (got " + format_number(p) + ")");
}

expected<void> require_range(std::string_view op, std::string_view param,
                             const std::array<double, 2>& range) {
  if (std::isfinite(range[0]) && std::isfinite(range[1]) && 0 < range[0] && range[0] <= range[1]) {
    return {};
  }
  return invalid_spec(op, std::string(param) + " must satisfy 0 < min <= max (got [" +
                              format_number(range[0]) + ", " + format_number(range[1]) + "])");
}

expected<void> first_failure(std::initializer_list<expected<void>> checks) {
  for (const auto& check : checks) {
    if (!check) {
      return check;
    }
  }
  return {};
}

expected<void> require_interpolation(std::string_view op, interpolation interp) {
  if (interp <= interpolation::opencv_bilinear) {
    return {};
  }
  return invalid_spec(op, "unknown interpolation " + std::to_string(static_cast<int>(interp)));
}

}  // namespace conveyor
