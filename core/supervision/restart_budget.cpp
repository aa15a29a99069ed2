#include "core/supervision/restart_budget.hpp"

#include <algorithm>

namespace conveyor {

std::string_view to_string(restart_strategy strategy) noexcept {
  switch (strategy) {
    case restart_strategy::one_for_one:
      return "one_for_one";
    case restart_strategy::one_for_all:
      return "one_for_all";
    case restart_strategy::rest_for_one:
      return "rest_for_one";
  }
  return "?";
}

restart_budget::restart_budget(restart_settings settings)
    : settings_(settings), rng_(settings.seed) {}

void restart_budget::forget_before(time_point now) {
  while (!restarts_.empty() && now - restarts_.front() >= settings_.period) {
    restarts_.pop_front();
  }
}

int restart_budget::recent(time_point now) {
  forget_before(now);
  return static_cast<int>(restarts_.size());
}

std::chrono::milliseconds restart_budget::backoff(std::size_t earlier) {
  auto lo = settings_.backoff_min.count();
  auto hi = std::max(lo, settings_.backoff_max.count());
  auto delay = lo;
  for (std::size_t i = 0; i < earlier && delay < hi; ++i) {
    delay = delay == 0 ? 0 : delay * 2;
  }
  delay = std::min(delay, hi);
  if (delay <= 1) {
    return std::chrono::milliseconds(delay);
  }
  std::uniform_int_distribution<std::int64_t> jitter(delay / 2, delay);
  return std::chrono::milliseconds(jitter(rng_));
}

std::optional<std::chrono::milliseconds> restart_budget::on_failure(time_point now,
                                                                    std::size_t streak) {
  forget_before(now);
  if (static_cast<int>(restarts_.size()) >= settings_.max_restarts) {
    return std::nullopt;
  }
  auto delay = streak == 0 ? std::chrono::milliseconds(0) : backoff(streak - 1);
  restarts_.push_back(now);
  return delay;
}

}  // namespace conveyor
