#pragma once
/// Internal to config/: `--set key.path=value` overrides applied to a parsed document.

#include <string_view>

#include <toml++/toml.h>

#include "conveyor/error.hpp"

namespace conveyor::config_detail {

/// Sets `key.path` of `root` to `value` parsed as a TOML value, or taken as a bare string when
/// it is not one; creates the missing tables on the path. The new nodes carry the source path
/// "--set <override>", so that the schema's messages name the override. errc::invalid_config
/// naming the override for a text without '=', a key path that is not dot-separated bare keys,
/// a path through a value that is not a table, or a value that is not UTF-8. Never throws
/// anything but std::bad_alloc.
expected<void> apply_override(toml::table& root, std::string_view override_text);

}  // namespace conveyor::config_detail
