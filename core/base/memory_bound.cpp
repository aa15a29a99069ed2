#include "core/base/memory_bound.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace conveyor {

namespace {

std::uint64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) {
    return UINT64_MAX;  // cannot be told: nothing is refused by this bound
  }
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

// cgroup v2's memory.max of this process's group ("max", absent, or unreadable: no limit).
std::uint64_t cgroup_limit() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::uint64_t limit = 0;
  if (in >> limit && limit > 0) {
    return limit;
  }
  return UINT64_MAX;
}

}  // namespace

std::uint64_t machine_memory_bytes() {
  static const std::uint64_t bytes = std::min(physical_memory(), cgroup_limit());
  return bytes;
}

std::optional<std::uint64_t> available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") {
      return kib * 1024;
    }
  }
  return std::nullopt;
}

expected<void> fits_in_memory(std::uint64_t bytes, const std::string& what) {
  const auto memory = machine_memory_bytes();
  if (bytes <= memory) {
    return {};
  }
  return error{errc::io_error, what + ": " + std::to_string(bytes) +
                                   " bytes, more than this machine's memory (" +
                                   std::to_string(memory) + " bytes)"};
}

}  // namespace conveyor
