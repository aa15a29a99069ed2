#pragma once
/// Loads a node plugin: a shared library that registers user steps (include/conveyor/step.hpp,
/// CONVEYOR_PLUGIN). Its API version symbol is read from its file, and checked, before the
/// library is loaded: a plugin of another version (or without the symbol, or not a shared
/// library) is refused without any of its code running, not even its static initialisers.
/// Once the version matches, dlopen runs the plugin's static initialisers; that is all it may
/// do before its entry point is found. A plugin refused then (no entry point) is unloaded
/// again (dlclose, its static destructors run). A library loaded once is not registered again.
/// Libraries whose entry point was called are never unloaded (their steps' code must outlive
/// every chain), even when it throws (it may have registered steps first). A crash inside a
/// plugin's step is not caught: it ends the process (README "Your own steps").

#include <string>

#include "conveyor/error.hpp"

namespace conveyor {

/// Reads `conveyor_step_api_version` from the ELF file at `path` (elf_symbol.hpp) and checks
/// it against CONVEYOR_STEP_API_VERSION, then dlopen(RTLD_NOW | RTLD_LOCAL)s that file (a
/// `path` without '/' is relative to the working directory, never searched for on the library
/// path: what is loaded is what was checked), checks the loaded symbol again, and calls
/// `conveyor_register_steps`. errc::not_found naming the library (with the reason: the file's
/// or dlerror's words) when it cannot be read or loaded or lacks a symbol; errc::invalid_config
/// naming both versions on a mismatch; errc::invalid_config with the message of what its
/// registration throws. Thread-safe.
expected<void> load_step_plugin(const std::string& path);

}  // namespace conveyor
