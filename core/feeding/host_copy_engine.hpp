#pragma once
/// The host copy engine: copy_engine.hpp with host memory for the device and a host_stream for
/// its queue. Threaded, it behaves as a CUDA stream does (asynchronous copies and normalize,
/// events, waits on a consumer's events, sticky faults), with delays and faults to inject: the
/// ring's protocol is tested with it on machines without a GPU. Inline and in place, it is the
/// host feeder's engine: the trainer reads the slot the samples were written into, and nothing
/// is copied or queued.
///
/// Consumer streams (consumer_stream::handle) are host_stream pointers; null is a consumer
/// whose work is done when it releases.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "core/feeding/copy_engine.hpp"
#include "core/feeding/host_stream.hpp"

namespace conveyor {

/// Faults to inject (threaded engines only; copies are numbered from 1).
struct host_engine_faults {
  std::chrono::microseconds copy_delay{0};  ///< every copy takes at least this long
  std::uint64_t fail_copy = 0;   ///< this copy faults: a sticky error, as a CUDA fault (0: none)
  std::uint64_t stall_copy = 0;  ///< this copy never ends (until the engine is destroyed)

  bool any() const noexcept { return copy_delay.count() > 0 || fail_copy > 0 || stall_copy > 0; }
};

struct host_engine_options {
  bool threaded = true;   ///< work runs on the engine's thread; else at once, on the caller's
  bool in_place = false;  ///< in_place(): the ring copies nothing (the host feeder)
  host_engine_faults faults;
};

class host_copy_engine final : public copy_engine {
 public:
  /// errc::invalid_argument for faults on an inline engine (they would block the feeder).
  static expected<std::shared_ptr<host_copy_engine>> create(host_engine_options options);

  std::string name() const override { return "host engine"; }
  int device() const noexcept override { return -1; }
  bool in_place() const noexcept override { return options_.in_place; }

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

  /// Copies queued so far.
  std::uint64_t copies() const noexcept { return copies_.load(); }

 private:
  explicit host_copy_engine(host_engine_options options);
  expected<void> usable() const;
  expected<void> copy(std::uint64_t number, std::uint8_t* dst, const std::uint8_t* src,
                      std::size_t bytes);

  host_engine_options options_;
  std::atomic<std::uint64_t> copies_{0};
  host_stream stream_;  // last member: its thread stops before the rest goes
};

/// host_copy_engine::create, as the engine a feeder takes (engine_factory).
expected<std::shared_ptr<copy_engine>> make_host_engine(host_engine_options options);

}  // namespace conveyor
