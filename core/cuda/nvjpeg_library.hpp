#pragma once
/// nvJPEG, loaded at run time (dlopen): a machine with CUDA's runtime but without nvJPEG
/// (this project's build machine, a CPU-only laptop) builds and runs everything else, and a
/// decode step that asks for the GPU says exactly what was missing. Looked for, in order: the
/// file CONVEYOR_NVJPEG names, then libnvjpeg.so.13, .so.12 and .so as the dynamic loader finds
/// them (LD_LIBRARY_PATH, the ld cache), then CUDA's own folders (/usr/local/cuda/lib64,
/// /usr/local/cuda/targets/x86_64-linux/lib). PyTorch's wheels carry one (torchvision.libs or
/// nvidia/*/lib): the GPU bundle's ./run finds it there (scripts/gpu-bundle).

#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/cuda/nvjpeg_api.hpp"

namespace conveyor::cuda {

struct nvjpeg_library {
  nvjpeg::api api{};
  std::string path;     ///< the file that was loaded
  std::string version;  ///< "13.0.1", from nvjpegGetProperty
};

/// The files load_nvjpeg tries, in order (CONVEYOR_NVJPEG's value first where it is set).
std::vector<std::string> nvjpeg_candidates();

/// The first of `candidates` that loads and has every entry point (a file loaded is never
/// unloaded). errc::not_found naming every file tried and the last reason (the loader's, or
/// the entry point a file lacked) when none does. Thread-safe; each call loads anew.
expected<nvjpeg_library> load_nvjpeg_from(const std::vector<std::string>& candidates);

/// The process's nvJPEG (load_nvjpeg_from(nvjpeg_candidates())), loaded on the first call (and
/// kept: never unloaded). The outcome of the first call is every later call's. Thread-safe.
expected<const nvjpeg_library*> load_nvjpeg();

}  // namespace conveyor::cuda
