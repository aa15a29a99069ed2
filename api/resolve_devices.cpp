#include "api/resolve_devices.hpp"

#include <algorithm>

#include "core/base/log.hpp"

#if CONVEYOR_HAVE_CUDA
#include "core/cuda/device_query.hpp"
constexpr bool cuda_build = true;
#else
constexpr bool cuda_build = false;
#endif

namespace conveyor {
namespace {

// The ids of the CUDA devices present; empty without CUDA, a driver or a device.
std::vector<int> present_devices() {
  std::vector<int> ids;
#if CONVEYOR_HAVE_CUDA
  if (auto devices = cuda::list_devices()) {
    for (const auto& d : *devices) {
      ids.push_back(d.id);
    }
  }
#endif
  return ids;
}

}  // namespace

expected<std::vector<int>> resolve_devices(const gpu_selection& gpus, const std::string& source) {
  if (gpus.kind == gpu_kind::host_feeders) {
    return std::vector<int>{};
  }
  auto present = present_devices();
  if (gpus.kind == gpu_kind::auto_detect) {
    if (present.empty()) {
      log("node")->info("gpus = \"auto\": no CUDA device here; one host feeder serves batches");
    }
    return present;
  }
  if (present.empty()) {
    log("node")->warn("gpus = {} CUDA devices, but this {} none: host feeders stand in for them",
                      gpus.ids.size(), cuda_build ? "machine has" : "build supports");
    return std::vector<int>{};
  }
  for (int id : gpus.ids) {
    if (std::find(present.begin(), present.end(), id) == present.end()) {
      return error{errc::invalid_config, source + ": gpus: CUDA device " + std::to_string(id) +
                                             " does not exist (this machine has " +
                                             std::to_string(present.size()) + ")"};
    }
  }
  return gpus.ids;
}

int gpu_slots(const gpu_selection& gpus, const std::vector<int>& devices) {
  if (!devices.empty()) {
    return static_cast<int>(devices.size());
  }
  switch (gpus.kind) {
    case gpu_kind::auto_detect:
      return 1;
    case gpu_kind::device_ids:
      return static_cast<int>(gpus.ids.size());
    case gpu_kind::host_feeders:
      return gpus.count;
  }
  return 1;
}

}  // namespace conveyor
