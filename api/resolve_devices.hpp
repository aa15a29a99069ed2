#pragma once
/// Which CUDA devices a topology's `gpus` names, on this machine and in this build.

#include <vector>

#include "config/topology.hpp"
#include "conveyor/error.hpp"

namespace conveyor {

/// The CUDA device of each GPU slot; empty when host feeders serve the slots (`gpus = N`, or no
/// CUDA in this build or on this machine: then a warning says so). errc::invalid_config names
/// a listed device id that this machine does not have.
expected<std::vector<int>> resolve_devices(const gpu_selection& gpus, const std::string& source);

/// How many GPU slots: one per CUDA device, else the host feeders asked for (1 for "auto").
int gpu_slots(const gpu_selection& gpus, const std::vector<int>& devices);

}  // namespace conveyor
