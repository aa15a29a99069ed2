#pragma once
/// The engine kit of the host engine for the ring protocol tests (ring_protocol.hpp): a host
/// copy engine (threaded and copying, or inline and in place as the host feeder runs it) and a
/// trainer whose stream is a host_stream of its own.

#include <cstring>
#include <mutex>

#include "core/feeding/host_copy_engine.hpp"
#include "support/ring_fault.hpp"
#include "support/ring_protocol.hpp"

namespace conveyor::testing {

/// A trainer's stream of host work, with snapshots of batch memory taken by its "kernels".
class host_trainer {
 public:
  consumer_stream stream() { return {&stream_}; }
  void read_later(const void* data, std::size_t bytes, std::chrono::milliseconds delay) {
    std::size_t index = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      index = snapshots_.size();
      snapshots_.emplace_back();
    }
    stream_.enqueue([this, data, bytes, delay, index]() -> expected<void> {
      stream_.pause(delay);  // a kernel that starts late
      std::vector<std::uint8_t> copy(bytes);
      std::memcpy(copy.data(), data, bytes);
      std::lock_guard<std::mutex> lock(mutex_);
      snapshots_[index] = std::move(copy);
      return {};
    });
  }
  /// Queues a "kernel" that faults: the stream fails, as a CUDA context does after a trap.
  void fault() {
    stream_.enqueue([]() -> expected<void> {
      return error{errc::device_error, "trainer kernel fault (injected)"};
    });
  }
  /// Every snapshot, once the stream has run what was queued (within a minute).
  std::vector<std::vector<std::uint8_t>> snapshots() {
    auto done = std::make_shared<host_event_state>();
    const auto record = done->arm();
    stream_.enqueue_record(done, record);
    auto finished =
        done->wait_until(record, host_event_state::clock::now() + std::chrono::minutes(1));
    EXPECT_TRUE(finished && *finished) << "the trainer's stream did not finish";
    std::lock_guard<std::mutex> lock(mutex_);
    return snapshots_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::vector<std::uint8_t>> snapshots_;
  host_stream stream_{"trainer", host_stream::mode::threaded};  // last: stops first
};

template <bool InPlace>
class host_kit {
 public:
  std::shared_ptr<copy_engine> engine(host_engine_faults faults = {}) {
    host_engine_options o;
    o.threaded = !InPlace;
    o.in_place = InPlace;
    o.faults = faults;
    auto made = make_host_engine(o);
    EXPECT_TRUE(made) << made.error().what();
    return made ? *made : nullptr;
  }
  consumer_stream trainer() { return trainer_.stream(); }
  void read_later(const void* data, std::size_t bytes, std::chrono::milliseconds delay) {
    trainer_.read_later(data, bytes, delay);
  }
  std::vector<std::vector<std::uint8_t>> snapshots() { return trainer_.snapshots(); }
  void fault_trainer() { trainer_.fault(); }
  static std::string fault_text() { return "trainer kernel fault (injected)"; }
  std::vector<std::uint8_t> read_now(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    return {p, p + bytes};
  }
  std::optional<std::string> unavailable() const { return std::nullopt; }

 private:
  host_trainer trainer_;
};

/// The host engine as tests inject faults into: threaded, copying.
using threaded_host_kit = host_kit<false>;
/// The host feeder's engine: inline, in place.
using in_place_host_kit = host_kit<true>;

}  // namespace conveyor::testing
