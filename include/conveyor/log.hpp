#pragma once
/// Where Conveyor's log lines go, and how many. Conveyor logs through its own loggers, one per
/// component ("batcher", "feeder", "monitor", "supervisor", ...); it never touches a trainer's
/// loggers, spdlog's default logger or its registry. By default lines go to stderr as
/// "<time> <level> [<component>] <message>".

#include <cstdint>
#include <functional>
#include <string_view>

namespace conveyor {

enum class log_level : std::uint8_t { trace, debug, info, warn, error, critical, off };

/// Sets the level of every Conveyor logger, present and future (default: info). Thread-safe.
void set_log_level(log_level level);
log_level get_log_level() noexcept;

/// Receives one log line: its level, the component that wrote it and the message (without
/// time or level). Called on Conveyor's threads, one call at a time; it must not block for
/// long, and must not call set_log_sink or a pipeline call (those may log: a deadlock);
/// get_log_level and set_log_level are fine.
using log_sink =
    std::function<void(log_level level, std::string_view component, std::string_view message)>;

/// Routes every Conveyor log line to `sink` instead of stderr; an empty sink restores stderr.
/// Thread-safe; takes effect for the next line.
void set_log_sink(log_sink sink);

}  // namespace conveyor
