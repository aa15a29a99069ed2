#pragma once
/// Which CUDA devices this process can use. A machine without a GPU driver is a machine with
/// zero devices (the host feeder stands in), never an error.

#include <string>
#include <vector>

#include "conveyor/error.hpp"

namespace conveyor::cuda {

struct device_info {
  int id = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  std::size_t memory_bytes = 0;
};

/// Thread-safe. Zero devices when there is no driver or no device; an error for anything else
/// (naming the CUDA call and its message).
expected<std::vector<device_info>> list_devices();

}  // namespace conveyor::cuda
