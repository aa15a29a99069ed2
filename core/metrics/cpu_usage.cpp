#include "core/metrics/cpu_usage.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <fstream>
#include <string>

namespace conveyor {
namespace {

double seconds_of(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

}  // namespace

std::optional<double> machine_busy_seconds(std::string_view stat, double ticks_per_s) {
  if (stat.substr(0, 4) != "cpu " || ticks_per_s <= 0) {
    return std::nullopt;
  }
  const auto line = stat.substr(0, stat.find('\n'));
  // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
  std::array<unsigned long long, 8> v{};
  const char* at = line.data() + 4;
  const char* end = line.data() + line.size();
  for (auto& x : v) {
    while (at < end && *at == ' ') {
      ++at;
    }
    auto [next, ec] = std::from_chars(at, end, x);
    if (ec != std::errc{} || next == at) {
      return std::nullopt;
    }
    at = next;
  }
  const auto busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  return static_cast<double>(busy) / ticks_per_s;
}

std::optional<cpu_times> read_cpu_times() {
  std::ifstream in("/proc/stat");
  std::string first;
  if (!in || !std::getline(in, first)) {
    return std::nullopt;
  }
  auto busy = machine_busy_seconds(first, static_cast<double>(sysconf(_SC_CLK_TCK)));
  rusage self{};
  if (!busy || getrusage(RUSAGE_SELF, &self) != 0) {
    return std::nullopt;
  }
  return cpu_times{*busy, seconds_of(self.ru_utime) + seconds_of(self.ru_stime)};
}

int usable_cores() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    return 1;
  }
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

}  // namespace conveyor
