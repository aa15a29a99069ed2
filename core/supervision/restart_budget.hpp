#pragma once
/// A supervisor's restart decisions, without actors or clocks of its own: restart intensity
/// (at most `max_restarts` restarts within `period`, as in Erlang/OTP) and exponential backoff
/// with jitter, paid only by a child that keeps failing without making progress: a crash that
/// one sample caused in a worker that was completing samples costs a restart, not a wait. Time
/// comes in as an argument and the jitter from a seed, so tests drive it deterministically.

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <string_view>

namespace conveyor {

/// Which children a supervisor restarts when one fails: just it, all of them, or it and those
/// started after it.
enum class restart_strategy : std::uint8_t { one_for_one, one_for_all, rest_for_one };

std::string_view to_string(restart_strategy strategy) noexcept;

struct restart_settings {
  int max_restarts = 5;
  std::chrono::milliseconds period{10000};
  std::chrono::milliseconds backoff_min{10};
  std::chrono::milliseconds backoff_max{1000};
  std::uint64_t seed = 0;
};

/// Single-threaded (owned by one supervisor).
class restart_budget {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  explicit restart_budget(restart_settings settings);

  /// A child failed at `now`; `streak` is how many times in a row it has now failed without
  /// completing anything in between (0: it made progress since its last start). Returns how
  /// long to wait before restarting it, or nullopt when this restart would exceed max_restarts
  /// within the period: the supervisor escalates. With progress (streak 0) the delay is zero;
  /// otherwise it is backoff_min doubled streak - 1 times, at most backoff_max, drawn in
  /// [delay/2, delay] (jitter: restarts do not move in lockstep).
  std::optional<std::chrono::milliseconds> on_failure(time_point now, std::size_t streak);

  /// Restarts within the period that ends at `now`.
  int recent(time_point now);
  const restart_settings& settings() const noexcept { return settings_; }

 private:
  void forget_before(time_point now);
  std::chrono::milliseconds backoff(std::size_t earlier);

  restart_settings settings_;
  std::deque<time_point> restarts_;
  std::mt19937_64 rng_;
};

}  // namespace conveyor
