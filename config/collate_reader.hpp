#pragma once
/// Internal to config/: the [collate] table of a topology, one sub-table per field
/// ([collate.features] mode = "pad" ...), checked against the fields the transform chain makes.

#include <string>
#include <utility>
#include <vector>

#include "config/schema_reader.hpp"
#include "core/base/field_schema.hpp"

namespace conveyor::config_detail {

/// Reads `root`'s [collate]: each key must be a field of `schema` (the chain's; reported at
/// the key otherwise), each table its mode ("stack", "pad", "ragged") and parameters
/// (multiple, value, max_shape, max_values), checked against the field's rank (max_shape:
/// one extent per axis). Problems go to root's report.
std::vector<std::pair<std::string, collate_spec>> read_collate(table_reader& root,
                                                               const sample_schema& schema);

}  // namespace conveyor::config_detail
