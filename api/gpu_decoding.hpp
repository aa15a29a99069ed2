#pragma once
/// Loading a topology the way a run does: once the GPU's JPEG decoder (nvJPEG,
/// core/cuda/nvjpeg_offload.hpp) is available to decode.on = "gpu" and "auto" in a CUDA build
/// (loading validates the transforms by building their chain, which opens the decoder). In a
/// build without CUDA, "gpu" is refused and "auto" decodes on the CPU. Every entry point that
/// runs a topology (the embedding API, conveyor-node, conveyor-analyze) loads through these.
/// Thread-safe.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "config/topology.hpp"
#include "conveyor/error.hpp"

namespace conveyor {

/// load_topology_file, with the GPU's JPEG decoder available.
expected<topology> load_topology_file_to_run(const std::filesystem::path& file,
                                             const std::vector<std::string>& overrides);

/// load_topology_string (no source name), with the GPU's JPEG decoder available.
expected<topology> load_topology_string_to_run(std::string_view toml,
                                               const std::vector<std::string>& overrides);

}  // namespace conveyor
