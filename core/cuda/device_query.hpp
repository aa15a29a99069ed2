#pragma once
/// Which CUDA devices this process can use. A machine without a GPU driver is a machine with
/// zero devices (the host feeder stands in), never an error; a driver older than the CUDA
/// runtime built in is an error that says so (it is not "no GPU").

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

/// Thread-safe. Zero devices when there is no driver or no device; errc::device_error naming
/// both versions when the driver is too old for the runtime; an error for anything else
/// (naming the CUDA call and its message).
expected<std::vector<device_info>> list_devices();

/// Whether `device` is one of this process's devices (the count is asked once), before `call`
/// is made on it: "CUDA device 5: cudaSetDevice not made: no such device (this process has
/// 1)" otherwise, as errc::invalid_argument. Thread-safe.
expected<void> check_device(int device, const char* call);

}  // namespace conveyor::cuda
