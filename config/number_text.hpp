#pragma once
/// Internal to config/: numbers as messages and summaries show them.

#include <string>

namespace conveyor::config_detail {

/// Whole numbers as integers ("100", "2147483647"), others in the shortest form that reads
/// back the same ("0.08", "1.5"); "nan", "inf" as such. Pure.
std::string number_text(double value);

}  // namespace conveyor::config_detail
