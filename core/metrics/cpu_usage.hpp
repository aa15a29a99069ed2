#pragma once
/// The CPU the machine and this process have used so far, for the autotuner's reading of how
/// many cores the rest of the machine keeps busy (competing processes, the trainer itself).

#include <optional>
#include <string_view>

namespace conveyor {

/// CPU-seconds used since boot (the machine) and since start (this process).
struct cpu_times {
  double machine_busy_s = 0;  ///< every core's non-idle time: /proc/stat's first line
  double process_s = 0;       ///< this process's user and system time (getrusage)
};

/// Now's figures; nullopt where /proc/stat cannot be read or parsed.
std::optional<cpu_times> read_cpu_times();

/// The busy CPU-seconds of /proc/stat's text `stat` (user, nice, system, irq, softirq and
/// steal of its "cpu " line, in `ticks_per_s` clock ticks); nullopt when that line is missing
/// or malformed. Pure.
std::optional<double> machine_busy_seconds(std::string_view stat, double ticks_per_s);

/// Cores this process may run on (its affinity mask), at least 1.
int usable_cores() noexcept;

}  // namespace conveyor
