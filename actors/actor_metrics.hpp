#pragma once
/// The figures an actor keeps about itself for the monitor: per-item latency percentiles (of the
/// last items), their histogram (since start) and items/s. Plain class; each actor owns one.

#include <chrono>
#include <cstdint>
#include <string>

#include "core/metrics/latency_histogram.hpp"
#include "core/metrics/latency_tracker.hpp"
#include "core/metrics/rate_meter.hpp"
#include "messages/monitor.hpp"

namespace conveyor {

/// Single-threaded (owned by one actor).
class actor_metrics {
 public:
  explicit actor_metrics(std::string name) : name_(std::move(name)) {}

  /// One item handled, which took `ns` nanoseconds.
  void record(std::int64_t ns);
  /// The report for the monitor, with the actor's mailbox depth and role-specific figures.
  actor_report report(std::uint64_t mailbox, std::string extra = {});
  const std::string& name() const noexcept { return name_; }

 private:
  std::string name_;
  latency_tracker latency_;
  latency_histogram histogram_;
  rate_meter rate_;
};

/// Nanoseconds since `start`.
inline std::int64_t elapsed_ns(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start)
      .count();
}

}  // namespace conveyor
