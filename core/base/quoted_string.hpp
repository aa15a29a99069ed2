#pragma once
/// A string as a JSON or TOML basic string (their escapes agree here): quoted, with '"', '\'
/// and control characters escaped (\uXXXX). Pure.

#include <string>
#include <string_view>

namespace conveyor {

std::string quoted_string(std::string_view text);

}  // namespace conveyor
