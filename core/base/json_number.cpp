#include "core/base/json_number.hpp"

#include <cmath>
#include <cstdio>

namespace conveyor {

std::string json_number(double v) {
  if (!std::isfinite(v)) {
    return "null";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace conveyor
