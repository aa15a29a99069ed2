#include "core/cuda/nvjpeg_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <optional>

namespace conveyor::cuda {
namespace nvjpeg {

const char* status_name(int s) noexcept {
  static constexpr const char* names[] = {"NVJPEG_STATUS_SUCCESS",
                                          "NVJPEG_STATUS_NOT_INITIALIZED",
                                          "NVJPEG_STATUS_INVALID_PARAMETER",
                                          "NVJPEG_STATUS_BAD_JPEG",
                                          "NVJPEG_STATUS_JPEG_NOT_SUPPORTED",
                                          "NVJPEG_STATUS_ALLOCATOR_FAILURE",
                                          "NVJPEG_STATUS_EXECUTION_FAILED",
                                          "NVJPEG_STATUS_ARCH_MISMATCH",
                                          "NVJPEG_STATUS_INTERNAL_ERROR",
                                          "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED",
                                          "NVJPEG_STATUS_INCOMPLETE_BITSTREAM"};
  if (s < 0 || s >= static_cast<int>(std::size(names))) {
    return "an nvJPEG status this build does not know";
  }
  return names[s];
}

}  // namespace nvjpeg

namespace {

// Looks `name` up in `handle` into `slot`; the error names the file and the entry point.
template <class Fn>
expected<void> bind(void* handle, const std::string& path, const char* name, Fn& slot) {
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    return error{errc::io_error, path + " has no " + name + " (not an nvJPEG of CUDA 12 or 13)"};
  }
  slot = reinterpret_cast<Fn>(symbol);  // NOLINT: dlsym's result is the function's address
  return {};
}

#define CONVEYOR_NVJPEG_BIND(field)                                        \
  if (auto ok = bind(handle, path, "nvjpeg" #field, out.api.field); !ok) { \
    return std::move(ok).error();                                          \
  }

expected<nvjpeg_library> bind_all(void* handle, const std::string& path) {
  nvjpeg_library out;
  out.path = path;
  CONVEYOR_NVJPEG_BIND(GetProperty)
  CONVEYOR_NVJPEG_BIND(CreateEx)
  CONVEYOR_NVJPEG_BIND(Destroy)
  CONVEYOR_NVJPEG_BIND(DecoderCreate)
  CONVEYOR_NVJPEG_BIND(DecoderDestroy)
  CONVEYOR_NVJPEG_BIND(DecoderStateCreate)
  CONVEYOR_NVJPEG_BIND(JpegStateDestroy)
  CONVEYOR_NVJPEG_BIND(BufferPinnedCreate)
  CONVEYOR_NVJPEG_BIND(BufferPinnedDestroy)
  CONVEYOR_NVJPEG_BIND(BufferDeviceCreate)
  CONVEYOR_NVJPEG_BIND(BufferDeviceDestroy)
  CONVEYOR_NVJPEG_BIND(StateAttachPinnedBuffer)
  CONVEYOR_NVJPEG_BIND(StateAttachDeviceBuffer)
  CONVEYOR_NVJPEG_BIND(JpegStreamCreate)
  CONVEYOR_NVJPEG_BIND(JpegStreamDestroy)
  CONVEYOR_NVJPEG_BIND(JpegStreamParse)
  CONVEYOR_NVJPEG_BIND(JpegStreamGetFrameDimensions)
  CONVEYOR_NVJPEG_BIND(JpegStreamGetComponentsNum)
  CONVEYOR_NVJPEG_BIND(DecodeParamsCreate)
  CONVEYOR_NVJPEG_BIND(DecodeParamsDestroy)
  CONVEYOR_NVJPEG_BIND(DecodeParamsSetOutputFormat)
  CONVEYOR_NVJPEG_BIND(DecodeParamsSetROI)
  CONVEYOR_NVJPEG_BIND(DecoderJpegSupported)
  CONVEYOR_NVJPEG_BIND(DecodeJpeg)
  int major = 0;
  int minor = 0;
  int patch = 0;
  if (out.api.GetProperty(MAJOR_VERSION, &major) == nvjpeg::success &&
      out.api.GetProperty(MINOR_VERSION, &minor) == nvjpeg::success &&
      out.api.GetProperty(PATCH_LEVEL, &patch) == nvjpeg::success) {
    out.version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  }
  return out;
}

#undef CONVEYOR_NVJPEG_BIND

}  // namespace

std::vector<std::string> nvjpeg_candidates() {
  std::vector<std::string> out;
  if (const char* named = std::getenv("CONVEYOR_NVJPEG"); named != nullptr && *named != '\0') {
    out.emplace_back(named);
  }
  for (const char* name : {"libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so"}) {
    out.emplace_back(name);
  }
  for (const char* folder :
       {"/usr/local/cuda/lib64/", "/usr/local/cuda/targets/x86_64-linux/lib/"}) {
    for (const char* name : {"libnvjpeg.so.13", "libnvjpeg.so.12"}) {
      out.push_back(std::string(folder) + name);
    }
  }
  return out;
}

expected<nvjpeg_library> load_nvjpeg_from(const std::vector<std::string>& candidates) {
  std::string tried;
  std::string last_word;
  for (const auto& path : candidates) {
    tried += (tried.empty() ? "" : ", ") + path;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      last_word = why != nullptr ? why : "not loaded";
      continue;
    }
    auto bound = bind_all(handle, path);  // kept loaded either way: never unloaded
    if (bound) {
      return bound;
    }
    last_word = bound.error().message();  // not an nvJPEG this code can use: the next file
  }
  return error{errc::not_found, "no usable nvJPEG (tried " + tried + "; last: " + last_word +
                                    "); set CONVEYOR_NVJPEG to the path of libnvjpeg.so"};
}

expected<const nvjpeg_library*> load_nvjpeg() {
  static std::once_flag once;
  static std::optional<expected<nvjpeg_library>> loaded;
  std::call_once(once, [] { loaded.emplace(load_nvjpeg_from(nvjpeg_candidates())); });
  if (!*loaded) {
    return loaded->error();
  }
  return &**loaded;
}

}  // namespace conveyor::cuda
