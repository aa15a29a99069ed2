#pragma once
/// Keeps a flood of similar log lines (one per hostile connection, say) from flooding the log:
/// at most `per_second` lines pass in any second; the rest are counted, and the next line that
/// passes says how many were left out. Plain code, with the clock passed in. Not thread-safe.

#include <chrono>
#include <cstdint>
#include <optional>

namespace conveyor {

class log_throttle {
 public:
  using clock = std::chrono::steady_clock;

  explicit log_throttle(std::uint32_t per_second) : per_second_(per_second) {}

  /// Whether a line may be logged at `now`; when it may, `suppressed` is how many were left
  /// out since the last one that was.
  bool allow(clock::time_point now, std::uint64_t& suppressed) {
    if (now - window_start_ >= std::chrono::seconds(1)) {
      window_start_ = now;
      in_window_ = 0;
    }
    if (in_window_ >= per_second_) {
      ++suppressed_;
      return false;
    }
    ++in_window_;
    suppressed = suppressed_;
    suppressed_ = 0;
    return true;
  }

 private:
  std::uint32_t per_second_;
  clock::time_point window_start_{};
  std::uint32_t in_window_ = 0;
  std::uint64_t suppressed_ = 0;
};

}  // namespace conveyor
