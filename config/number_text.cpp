#include "config/number_text.hpp"

#include <cmath>
#include <cstdint>

#include "core/transforms/spec_checks.hpp"

namespace conveyor::config_detail {

std::string number_text(double value) {
  // Below 2^53 every whole double is exact as an integer; format_number would write 100 as
  // "1e+02" (its shortest round-trip form).
  constexpr double exact_integers = 9007199254740992.0;
  if (std::isfinite(value) && value == std::trunc(value) && std::fabs(value) < exact_integers) {
    return std::to_string(static_cast<std::int64_t>(value));
  }
  return format_number(value);
}

}  // namespace conveyor::config_detail
