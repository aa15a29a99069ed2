#pragma once
/// Internal to config/: a [[transform]] table whose op is a registered user step
/// (core/transforms/step_registry.hpp) -> its step_params and the step its factory makes.

#include <optional>
#include <string>

#include "config/schema_reader.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor::config_detail {

/// Reads every key of `table` but `op` into step_params (booleans, integers, floats, strings,
/// arrays of numbers or of strings, each with its location), calls `factory` (registered as
/// `name`) with them and reports: a value of another kind, what the factory throws (at the
/// key a step_error names, else at the table), and the keys it never asked for. nullopt after
/// a report.
std::optional<user_step_spec> read_user_step(table_reader& table, const std::string& name,
                                             const step_factory& factory);

/// "; registered steps: a, b" (or a hint to load a plugin) for an unknown op's message.
std::string registered_steps_hint();

}  // namespace conveyor::config_detail
