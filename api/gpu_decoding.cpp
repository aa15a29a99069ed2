#include "api/gpu_decoding.hpp"

#include "config/load_topology.hpp"

#if CONVEYOR_HAVE_CUDA
#include "core/cuda/nvjpeg_offload.hpp"
#endif

namespace conveyor {
namespace {

void enable_gpu_decoding() {
#if CONVEYOR_HAVE_CUDA
  cuda::install_jpeg_offload();
#endif
}

}  // namespace

expected<topology> load_topology_file_to_run(const std::filesystem::path& file,
                                             const std::vector<std::string>& overrides) {
  enable_gpu_decoding();
  return load_topology_file(file, overrides);
}

expected<topology> load_topology_string_to_run(std::string_view toml,
                                               const std::vector<std::string>& overrides) {
  enable_gpu_decoding();
  return load_topology_string(toml, "", overrides);
}

}  // namespace conveyor
