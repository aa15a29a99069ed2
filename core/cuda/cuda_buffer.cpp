#include "core/cuda/cuda_buffer.hpp"

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/device_guard.hpp"

namespace conveyor::cuda {
namespace {

expected<void*> raw_allocate(memory_kind kind, int device, std::size_t bytes) {
  void* memory = nullptr;
  auto status = kind == memory_kind::device ? cudaMalloc(&memory, bytes)
                                            : cudaHostAlloc(&memory, bytes, cudaHostAllocPortable);
  const char* call = kind == memory_kind::device ? "cudaMalloc" : "cudaHostAlloc";
  if (auto ok = cuda_check(status, call, device); !ok) {
    return error{ok.error().code(),
                 ok.error().message() + " (" + std::to_string(bytes) + " bytes)"};
  }
  return memory;
}

}  // namespace

template <memory_kind Kind>
expected<cuda_buffer<Kind>> cuda_buffer<Kind>::allocate(int device, std::size_t bytes) {
  if (bytes == 0) {
    return cuda_buffer();
  }
  auto guard = device_guard::enter(device);
  if (!guard) {
    return std::move(guard).error();
  }
  auto memory = raw_allocate(Kind, device, bytes);
  if (!memory) {
    return std::move(memory).error();
  }
  return cuda_buffer(static_cast<std::uint8_t*>(*memory), bytes, device);
}

template <memory_kind Kind>
void memory_releaser<Kind>::operator()(std::uint8_t* memory) const noexcept {
  auto guard = enter_for_release(device);
  if (Kind == memory_kind::device) {
    log_failure(cudaFree(memory), "cudaFree", device);
  } else {
    log_failure(cudaFreeHost(memory), "cudaFreeHost", device);
  }
}

template struct memory_releaser<memory_kind::pinned_host>;
template struct memory_releaser<memory_kind::device>;
template class cuda_buffer<memory_kind::pinned_host>;
template class cuda_buffer<memory_kind::device>;

}  // namespace conveyor::cuda
