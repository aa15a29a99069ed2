#include "core/transforms/jpeg_offload.hpp"

#include <mutex>
#include <utility>

namespace conveyor {
namespace {

struct provider_slot {
  std::mutex mutex;
  jpeg_offload_provider provider;
};

provider_slot& the_slot() {
  static provider_slot slot;
  return slot;
}

}  // namespace

void set_jpeg_offload_provider(jpeg_offload_provider provider) {
  auto& slot = the_slot();
  std::lock_guard lock(slot.mutex);
  slot.provider = std::move(provider);
}

expected<std::shared_ptr<jpeg_offload>> open_jpeg_offload(int device, int lanes) {
  jpeg_offload_provider provider;
  {
    auto& slot = the_slot();
    std::lock_guard lock(slot.mutex);
    provider = slot.provider;
  }
  if (!provider) {
    return error{errc::not_found, "this build has no CUDA (it was built without nvcc)"};
  }
  return provider(device, lanes);
}

}  // namespace conveyor
