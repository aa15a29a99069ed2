#include "core/cuda/cuda_copy_engine.hpp"

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "core/cuda/cuda_buffer.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_event.hpp"
#include "core/cuda/device_guard.hpp"
#include "core/cuda/normalize_kernel.hpp"

namespace conveyor::cuda {
namespace {

/// An engine event: one of the engine's device, and one of each other device whose consumer
/// stream it was recorded on (CUDA records an event only on a stream of its own device). The
/// trainer's thread records; the feeder's and the completion thread query the last record.
class cuda_engine_event final : public engine_event {
 public:
  explicit cuda_engine_event(cuda_event e) : own_(std::move(e)) {}

  /// The event that the last record used.
  const cuda_event& recorded() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return *recorded_;
  }
  /// Records on `stream` of `device`, with this event's event of that device (made on first
  /// use); the caller has made `device` current.
  expected<void> record(int device, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto event = event_of_device(device);
    if (!event) {
      return std::move(event).error();
    }
    CONVEYOR_CUDA_TRY(device, cudaEventRecord((*event)->get(), stream));
    recorded_ = *event;
    return {};
  }

 private:
  expected<cuda_event*> event_of_device(int device) {
    if (device == own_.device()) {
      return &own_;
    }
    for (auto& e : others_) {
      if (e->device() == device) {
        return e.get();
      }
    }
    auto made = cuda_event::create(device);
    if (!made) {
      return std::move(made).error();
    }
    others_.push_back(std::make_unique<cuda_event>(std::move(*made)));
    return others_.back().get();
  }

  mutable std::mutex mutex_;
  cuda_event own_;
  std::vector<std::unique_ptr<cuda_event>> others_;
  const cuda_event* recorded_ = &own_;
};

const cuda_event& event_of(const engine_event& e) {
  return static_cast<const cuda_engine_event&>(e).recorded();
}
cuda_engine_event& engine_event_of(engine_event& e) {
  return static_cast<cuda_engine_event&>(e);
}

/// The device of a consumer's stream: the stream's own; for the legacy default stream (null)
/// the calling thread's current device, whose default stream that is, or `engine_device` on a
/// thread that has not used CUDA (nothing of the trainer's can be queued there, and asking for
/// "the current device" would create device 0's context).
expected<int> consumer_device(cudaStream_t stream, int engine_device) {
  int device = -1;
  if (stream == nullptr) {
    if (!thread_has_context()) {
      return engine_device;
    }
    CONVEYOR_CUDA_TRY(engine_device, cudaGetDevice(&device));
  } else {
    CONVEYOR_CUDA_TRY(engine_device, cudaStreamGetDevice(stream, &device));
  }
  return device;
}

template <memory_kind Kind>
expected<engine_buffer> shared_allocation(int device, std::size_t bytes) {
  auto buffer = cuda_buffer<Kind>::allocate(device, bytes);
  if (!buffer) {
    return std::move(buffer).error();
  }
  if (buffer->data() == nullptr) {
    return engine_buffer{};
  }
  auto owner = std::make_shared<cuda_buffer<Kind>>(std::move(*buffer));
  return engine_buffer{std::shared_ptr<std::uint8_t>(owner, owner->data()), owner->size()};
}

/// Runs the CUDA call `call` (named `name` in its error) with `device` current, and gives the
/// calling thread its current device back.
template <class Call>
expected<void> on_device(int device, const char* name, Call call) {
  auto guard = device_guard::enter(device);
  if (!guard) {
    return std::move(guard).error();
  }
  return cuda_check(call(), name, device);
}

// Sleeps between event queries grow from 10 us to 1 ms: a copy of a batch takes about a
// millisecond, and the poll is the only way to wait with a deadline.
constexpr std::chrono::microseconds first_pause{10};
constexpr std::chrono::microseconds longest_pause{1000};

}  // namespace

expected<std::shared_ptr<cuda_copy_engine>> cuda_copy_engine::create(int device) {
  auto stream = cuda_stream::create(device);
  if (!stream) {
    return std::move(stream).error();
  }
  return std::shared_ptr<cuda_copy_engine>(new cuda_copy_engine(device, std::move(*stream)));
}

expected<std::shared_ptr<copy_engine>> make_cuda_engine(int device) {
  auto engine = cuda_copy_engine::create(device);
  if (!engine) {
    return std::move(engine).error();
  }
  return std::shared_ptr<copy_engine>(std::move(*engine));
}

expected<engine_buffer> cuda_copy_engine::allocate_host(std::size_t bytes) {
  return shared_allocation<memory_kind::pinned_host>(device_, bytes);
}

expected<engine_buffer> cuda_copy_engine::allocate_device(std::size_t bytes) {
  return shared_allocation<memory_kind::device>(device_, bytes);
}

expected<std::unique_ptr<engine_event>> cuda_copy_engine::create_event() {
  auto event = cuda_event::create(device_);
  if (!event) {
    return std::move(event).error();
  }
  return std::unique_ptr<engine_event>(std::make_unique<cuda_engine_event>(std::move(*event)));
}

expected<void> cuda_copy_engine::copy_to_device(std::uint8_t* dst, const std::uint8_t* src,
                                                std::size_t bytes) {
  return on_device(device_, "cudaMemcpyAsync", [&] {
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_.get());
  });
}

expected<void> cuda_copy_engine::normalize(const std::uint8_t* src, const uint8_batch_shape& shape,
                                           const normalize_coefficients& k, dtype out, void* dst) {
  return launch_normalize(src, shape, k, out, dst, stream_);  // sets the device itself
}

expected<void> cuda_copy_engine::wait_for(const engine_event& e) {
  return on_device(device_, "cudaStreamWaitEvent",
                   [&] { return cudaStreamWaitEvent(stream_.get(), event_of(e).get(), 0); });
}

expected<void> cuda_copy_engine::record(engine_event& e) {
  auto guard = device_guard::enter(device_);
  if (!guard) {
    return std::move(guard).error();
  }
  return engine_event_of(e).record(device_, stream_.get());
}

// On the trainer's thread, whose device state it leaves as it was. The record goes to the
// device of the trainer's stream, with an event of that device (a peer GPU's stream is
// refused with the engine's event), and the copy engine's wait covers it (a stream may wait
// for an event of another device). The legacy default stream (null) is the one of the
// thread's current device; the engine's on a thread that has not used CUDA.
expected<void> cuda_copy_engine::record_on(engine_event& e, consumer_stream stream) {
  const auto consumer = static_cast<cudaStream_t>(stream.handle);
  auto device = consumer_device(consumer, device_);
  if (!device) {
    return std::move(device).error();
  }
  auto guard = device_guard::enter(*device);
  if (!guard) {
    return std::move(guard).error();
  }
  return engine_event_of(e).record(*device, consumer);
}

expected<bool> cuda_copy_engine::query(const engine_event& e) {
  return event_of(e).ready();
}

expected<bool> cuda_copy_engine::wait_until(const engine_event& e, clock::time_point deadline) {
  auto pause = first_pause;
  for (;;) {
    auto ready = event_of(e).ready();
    if (!ready || *ready) {
      return ready;
    }
    if (clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, longest_pause);
  }
}

}  // namespace conveyor::cuda
