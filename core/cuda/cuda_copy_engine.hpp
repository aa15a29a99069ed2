#pragma once
/// The CUDA copy engine (core/feeding/copy_engine.hpp): one non-blocking stream of one device,
/// pinned host memory, device memory, CUDA events and the normalize kernel. Consumer streams
/// are cudaStream_t (null: the legacy default stream). Every call makes the device current for
/// itself and restores the caller's, so any thread may use the engine (the feeder, the
/// completion thread, a trainer releasing a batch). Completions are polled (cudaEventQuery),
/// never awaited without a deadline: a sticky CUDA error surfaces from the next query. No CUDA
/// header needed to use it.

#include <memory>

#include "core/cuda/cuda_stream.hpp"
#include "core/feeding/copy_engine.hpp"

namespace conveyor::cuda {

class cuda_copy_engine final : public copy_engine {
 public:
  /// Makes the stream on `device`; CUDA errors name the device and the call.
  static expected<std::shared_ptr<cuda_copy_engine>> create(int device);

  std::string name() const override { return "CUDA device " + std::to_string(device_); }
  int device() const noexcept override { return device_; }
  bool in_place() const noexcept override { return false; }

  expected<engine_buffer> allocate_host(std::size_t bytes) override;
  expected<engine_buffer> allocate_device(std::size_t bytes) override;
  expected<std::unique_ptr<engine_event>> create_event() override;

  expected<void> copy_to_device(std::uint8_t* dst, const std::uint8_t* src,
                                std::size_t bytes) override;
  expected<void> normalize(const std::uint8_t* src, const uint8_batch_shape& shape,
                           const normalize_coefficients& k, dtype out, void* dst) override;
  expected<void> wait_for(const engine_event& e) override;
  expected<void> record(engine_event& e) override;
  expected<void> record_on(engine_event& e, consumer_stream stream) override;
  expected<bool> query(const engine_event& e) override;
  expected<bool> wait_until(const engine_event& e, clock::time_point deadline) override;

  const cuda_stream& stream() const noexcept { return stream_; }

 private:
  cuda_copy_engine(int device, cuda_stream stream) : device_(device), stream_(std::move(stream)) {}

  int device_;
  cuda_stream stream_;
};

/// cuda_copy_engine::create, as the engine a feeder takes (actors/feeder.hpp's engine_factory).
expected<std::shared_ptr<copy_engine>> make_cuda_engine(int device);

}  // namespace conveyor::cuda
