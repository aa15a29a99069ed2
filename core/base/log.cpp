#include "core/base/log.hpp"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <atomic>
#include <map>
#include <mutex>

namespace conveyor {
namespace {

// Forwards each line to the trainer's sink when one is set, else to stderr (in colour on a
// terminal). base_sink's mutex serialises the calls.
class routing_sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void route_to(log_sink target) {
    std::lock_guard<std::mutex> lock(mutex_);
    user_ = std::move(target);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (user_) {
      user_(static_cast<log_level>(msg.level),
            std::string_view(msg.logger_name.data(), msg.logger_name.size()),
            std::string_view(msg.payload.data(), msg.payload.size()));
      return;
    }
    stderr_->log(msg);
  }
  void flush_() override { stderr_->flush(); }
  void set_pattern_(const std::string& pattern) override { stderr_->set_pattern(pattern); }
  void set_formatter_(std::unique_ptr<spdlog::formatter> f) override {
    stderr_->set_formatter(std::move(f));
  }

 private:
  log_sink user_;
  std::shared_ptr<spdlog::sinks::stderr_color_sink_mt> stderr_ =
      std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
};

struct registry {
  registry() { sink->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ [%n] %v"); }

  // Never held while a sink's lock is taken: a trainer's sink may call get_log_level().
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<spdlog::logger>> loggers;
  std::atomic<spdlog::level::level_enum> level{spdlog::level::info};
  std::shared_ptr<routing_sink> sink = std::make_shared<routing_sink>();
};

// Never destroyed: loggers may be used by threads that outlive static destruction.
registry& loggers() {
  static auto* r = new registry;
  return *r;
}

}  // namespace

std::shared_ptr<spdlog::logger> log(const std::string& name) {
  auto& r = loggers();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto& logger = r.loggers[name];
  if (!logger) {
    // The shared sink already has the format: no set_pattern, which would lock the sink.
    logger = std::make_shared<spdlog::logger>(name, r.sink);
    logger->set_level(r.level.load());
  }
  return logger;
}

void set_log_level(spdlog::level::level_enum level) {
  auto& r = loggers();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.level.store(level);
  for (auto& [name, logger] : r.loggers) {
    logger->set_level(level);
  }
}

// conveyor::log_level and spdlog's levels are in the same order, trace to off.
void set_log_level(log_level level) {
  set_log_level(static_cast<spdlog::level::level_enum>(level));
}

log_level get_log_level() noexcept {
  return static_cast<log_level>(loggers().level.load());
}

void set_log_sink(log_sink sink) {
  loggers().sink->route_to(std::move(sink));
}

}  // namespace conveyor
