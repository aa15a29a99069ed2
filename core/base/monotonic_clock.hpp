#pragma once
/// CLOCK_MONOTONIC in nanoseconds: one clock that every process of the machine shares, so a
/// time stamp written by the node can be compared with a client's "now".

#include <cstdint>
#include <ctime>

namespace conveyor {

inline std::uint64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace conveyor
