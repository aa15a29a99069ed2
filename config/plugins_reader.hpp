#pragma once
/// Internal to config/: the [plugins] table, whose libraries are loaded as it is read.

#include "config/schema_reader.hpp"
#include "config/topology.hpp"

namespace conveyor::config_detail {

/// Reads `libraries` (an array of paths) and loads each (load_step_plugin) so that the
/// [[transform]] tables after it may name its steps; a library that does not load, lacks a
/// symbol or was built against another step API version is reported at its entry, naming it.
plugins_config read_plugins(table_reader& section);

}  // namespace conveyor::config_detail
