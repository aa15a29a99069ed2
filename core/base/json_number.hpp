#pragma once
/// A number as JSON text: 6 significant digits (%.6g), and null where it is not finite (JSON
/// has no inf or nan). The apps' JSON lines and reports write numbers with it. Pure.

#include <string>

namespace conveyor {

std::string json_number(double v);

}  // namespace conveyor
