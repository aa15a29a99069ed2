#pragma once
/// One named spdlog logger per component ("batcher", "feeder", "monitor", ...), all writing
/// through one sink with the same format: stderr, or the trainer's sink (conveyor/log.hpp).
/// Conveyor's loggers are kept apart from spdlog's registry, so a trainer's own spdlog loggers
/// (even one named "monitor") and its global level are left alone. Thread-safe.

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "conveyor/log.hpp"

namespace conveyor {

/// The logger named `name`, created on first use.
std::shared_ptr<spdlog::logger> log(const std::string& name);

/// Sets the level of every Conveyor logger, present and future (e.g. from --log-level).
void set_log_level(spdlog::level::level_enum level);

}  // namespace conveyor
