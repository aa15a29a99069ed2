#pragma once
/// Loads a node plugin: a shared library that registers user steps (include/conveyor/step.hpp,
/// CONVEYOR_PLUGIN). Its API version symbol is read and checked before anything in it is
/// called; a library loaded once is not registered again. Libraries are never unloaded (their
/// steps' code must outlive every chain). A crash inside a plugin's step is not caught: it
/// ends the process (README "Your own steps").

#include <string>

#include "conveyor/error.hpp"

namespace conveyor {

/// dlopen(RTLD_NOW | RTLD_LOCAL)s `path`, checks `conveyor_step_api_version` against
/// CONVEYOR_STEP_API_VERSION and calls `conveyor_register_steps`. errc::not_found naming the
/// library (with dlerror's words) when it cannot be loaded or lacks a symbol;
/// errc::invalid_config naming both versions on a mismatch; errc::invalid_config with the
/// message of what its registration throws. Thread-safe.
expected<void> load_step_plugin(const std::string& path);

}  // namespace conveyor
