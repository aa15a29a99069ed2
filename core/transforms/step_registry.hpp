#pragma once
/// The user steps of this process (include/conveyor/step.hpp): the factories that
/// conveyor::register_step and node plugins (plugin_loader.hpp) registered, by name. A
/// topology's `[[transform]]` table whose op is no built-in one is looked up here.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/step.hpp"

namespace conveyor {

/// The factory registered as `name`, if any. Thread-safe.
std::optional<step_factory> find_registered_step(std::string_view name);

/// Every registered name, sorted, for messages. Thread-safe.
std::vector<std::string> registered_step_names();

/// True when `op` names a built-in step (transform_spec.hpp).
bool is_builtin_op(std::string_view op);

}  // namespace conveyor
