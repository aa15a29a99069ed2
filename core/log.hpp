#pragma once
/// One named spdlog logger per component ("batcher", "feeder", "monitor", ...), all writing
/// to stderr with the same format. Thread-safe.

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace conveyor {

/// The logger named `name`, created on first use.
std::shared_ptr<spdlog::logger> log(const std::string& name);

/// Sets the level of every Conveyor logger, present and future (e.g. from --log-level).
void set_log_level(spdlog::level::level_enum level);

}  // namespace conveyor
