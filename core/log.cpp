#include "core/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace conveyor {

std::shared_ptr<spdlog::logger> log(const std::string& name) {
  if (auto existing = spdlog::get(name)) {
    return existing;
  }
  try {
    auto logger = spdlog::stderr_color_mt(name);
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ [%n] %v");
    return logger;
  } catch (const spdlog::spdlog_ex&) {
    return spdlog::get(name);  // another thread created it in between
  }
}

void set_log_level(spdlog::level::level_enum level) {
  spdlog::set_level(level);
}

}  // namespace conveyor
