#pragma once
/// The engine kit of the CUDA engine for the ring protocol tests (support/ring_protocol.hpp):
/// CUDA copy engines on the first device, and a trainer with a non-blocking stream of its own
/// whose kernels read batch memory late (a spin kernel, then a copy into pinned memory).
/// Unavailable where there is no CUDA device.

#include <cuda_runtime.h>

#include <chrono>
#include <thread>

#include "core/cuda/cuda_copy_engine.hpp"
#include "core/cuda/device_query.hpp"
#include "cuda_fixture.hpp"
#include "trainer_kernels.hpp"

namespace conveyor::cuda::testing {

class cuda_kit {
 public:
  /// Where the kit cannot run, a test that uses it is skipped (unavailable()) or, where the
  /// GPU is required or the driver is too old (see cuda_fixture.hpp), failed.
  cuda_kit() {
    auto device = first_device();
    if (!device) {
      why_ = device.error().what();
      if (!skippable(device)) {
        ADD_FAILURE() << why_;
      }
      return;
    }
    device_ = *device;
    EXPECT_EQ(cudaSetDevice(device_), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  ~cuda_kit() {
    if (stream_ != nullptr) {
      finish();
      cudaStreamDestroy(stream_);
    }
    for (auto& s : pinned_) {
      cudaFreeHost(s.first);
    }
  }
  cuda_kit(const cuda_kit&) = delete;
  cuda_kit& operator=(const cuda_kit&) = delete;

  std::optional<std::string> unavailable() const {
    return why_.empty() ? std::nullopt : std::optional<std::string>(why_);
  }
  std::shared_ptr<copy_engine> engine() {
    auto made = make_cuda_engine(device_);
    EXPECT_TRUE(made) << made.error().what();
    return made ? *made : nullptr;
  }
  consumer_stream trainer() { return {stream_}; }
  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }

  void read_later(const void* data, std::size_t bytes, std::chrono::milliseconds delay) {
    EXPECT_EQ(launch_spin(stream_, delay), cudaSuccess);
    void* host = nullptr;
    EXPECT_EQ(cudaMallocHost(&host, bytes), cudaSuccess);
    pinned_.emplace_back(host, bytes);
    EXPECT_EQ(cudaMemcpyAsync(host, data, bytes, cudaMemcpyDeviceToHost, stream_), cudaSuccess);
  }
  /// A trap on the trainer's stream: a sticky error for every later call on the device.
  void fault_trainer() { EXPECT_EQ(launch_trap(stream_), cudaSuccess); }
  static std::string fault_text() { return " failed: cudaError"; }
  std::vector<std::vector<std::uint8_t>> snapshots() {
    finish();
    std::vector<std::vector<std::uint8_t>> out;
    for (auto& s : pinned_) {
      const auto* p = static_cast<const std::uint8_t*>(s.first);
      out.emplace_back(p, p + s.second);
    }
    return out;
  }
  std::vector<std::uint8_t> read_now(const void* data, std::size_t bytes) {
    std::vector<std::uint8_t> out(bytes);
    EXPECT_EQ(cudaMemcpy(out.data(), data, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  /// Waits (at most a minute) for the trainer's stream.
  void finish() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (cudaStreamQuery(stream_) == cudaErrorNotReady) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the trainer's stream hangs";
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  std::string why_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::vector<std::pair<void*, std::size_t>> pinned_;
};

}  // namespace conveyor::cuda::testing
