#include "apps/conveyor-node/process_io.hpp"

#include <fstream>
#include <string>

namespace conveyor {

std::uint64_t storage_read_bytes() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "read_bytes:") {
      return value;
    }
  }
  return 0;
}

}  // namespace conveyor
