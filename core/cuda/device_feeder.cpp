#include "core/cuda/device_feeder.hpp"

#include <memory>
#include <string>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/device_guard.hpp"
#include "core/cuda/normalize_kernel.hpp"
#include "core/transforms/normalize_batch.hpp"

namespace conveyor::cuda {
namespace {

error misuse(int device, const std::string& what) {
  return error{errc::invalid_argument,
               "CUDA feeder on device " + std::to_string(device) + ": " + what};
}

uint8_batch_shape uint8_shape(const batch_layout& l) {
  return {l.samples, l.channels, l.height, l.width, l.layout};
}

/// Grows `buffer` to at least `bytes`; a larger batch than any before costs one reallocation.
template <memory_kind Kind>
expected<void> grow(cuda_buffer<Kind>& buffer, int device, std::size_t bytes) {
  if (buffer.size() >= bytes) {
    return {};
  }
  buffer = {};  // free first: the old and the new need not fit together
  auto fresh = cuda_buffer<Kind>::allocate(device, bytes);
  if (!fresh) {
    return std::move(fresh).error();
  }
  buffer = std::move(*fresh);
  return {};
}

void CUDART_CB run_on_device_callback(void* user) {
  std::unique_ptr<std::function<void()>> callback(static_cast<std::function<void()>*>(user));
  try {
    (*callback)();
  } catch (const std::exception& e) {
    log("cuda")->error("feeder completion callback threw: {}", e.what());
  }
}

expected<void> enqueue_callback(const cuda_stream& stream, std::function<void()> on_device) {
  auto callback = std::make_unique<std::function<void()>>(std::move(on_device));
  CONVEYOR_CUDA_TRY(stream.device(),
                    cudaLaunchHostFunc(stream.get(), run_on_device_callback, callback.get()));
  callback.release();  // NOLINT(bugprone-unused-return-value): run_on_device_callback owns it
  return {};
}

}  // namespace

expected<device_feeder> device_feeder::create(const device_feeder_options& options) {
  if (options.slots == 0) {
    return misuse(options.device, "needs at least one slot");
  }
  if (options.normalize && options.normalized_type != dtype::float32 &&
      options.normalized_type != dtype::bfloat16) {
    return misuse(options.device, "normalize writes float32 or bfloat16, not " +
                                      std::string(name_of(options.normalized_type)));
  }
  device_feeder feeder(options);
  auto stream = cuda_stream::create(options.device);
  if (!stream) {
    return std::move(stream).error();
  }
  feeder.stream_ = std::move(*stream);
  feeder.slots_.resize(options.slots);
  for (std::size_t i = 0; i < options.slots; ++i) {
    auto& slot = feeder.slots_[i];
    slot.index_ = i;
    auto copied = cuda_event::create(options.device);
    auto done = cuda_event::create(options.device);
    if (!copied || !done) {
      return copied ? std::move(done).error() : std::move(copied).error();
    }
    slot.copied_ = std::move(*copied);
    slot.done_ = std::move(*done);
    feeder.free_.push_back(i);
  }
  return feeder;
}

device_feeder::~device_feeder() {
  if (stream_.get() != nullptr) {
    if (auto ok = stream_.synchronize(); !ok) {
      log("cuda")->error("{}", ok.error().what());
    }
  }
}

expected<void> device_feeder::check(const batch_layout& layout) const {
  if (layout.samples == 0) {
    return {};  // an end-of-epoch marker: nothing to copy, whatever its shape says
  }
  if (options_.normalize) {
    if (layout.type != dtype::uint8) {
      return misuse(options_.device, "normalize on the GPU needs uint8 samples, got " +
                                         std::string(name_of(layout.type)) +
                                         " (end the transform chain with to_uint8)");
    }
    return check_normalize_batch(uint8_shape(layout), options_.normalized_type);
  }
  if (layout.type != dtype::uint8 && layout.layout != pixel_layout::chw) {
    return misuse(options_.device, "only uint8 samples may be HWC");
  }
  if (layout.type == dtype::bfloat16 || layout.samples < 0 || layout.channels < 0 ||
      layout.height < 0 || layout.width < 0) {
    return misuse(options_.device, "batches of uint8 or float32 samples only");
  }
  return {};
}

expected<void> device_feeder::reserve(feeder_slot& slot, const batch_layout& layout) {
  const int device = options_.device;
  if (auto ok = grow(slot.staging_, device, layout.bytes()); !ok) {
    return ok;
  }
  if (auto ok = grow(slot.input_, device, layout.bytes()); !ok) {
    return ok;
  }
  if (options_.normalize) {
    auto result_bytes = uint8_shape(layout).elements() * size_of(options_.normalized_type);
    return grow(slot.result_, device, result_bytes);
  }
  return {};
}

device_tensor device_feeder::output_of(const feeder_slot& slot) const {
  const auto& l = slot.layout_;
  device_tensor out;
  out.device = options_.device;
  out.shape = {l.samples, l.channels, l.height, l.width};
  if (options_.normalize) {
    out.type = options_.normalized_type;
    out.data = l.samples > 0 ? slot.result_.data() : nullptr;
  } else {
    out.type = l.type;
    out.data = l.samples > 0 ? slot.input_.data() : nullptr;
  }
  return out;
}

expected<feeder_slot*> device_feeder::acquire(const batch_layout& layout) {
  if (free_.empty()) {
    return misuse(options_.device, "no free slot (a batch came without a credit)");
  }
  if (auto ok = check(layout); !ok) {
    return std::move(ok).error();
  }
  auto& slot = slots_[free_.front()];
  // The slot's previous copy may still be reading its staging buffer (released early).
  if (slot.recorded_) {
    if (auto ok = slot.copied_.synchronize(); !ok) {
      return std::move(ok).error();
    }
  }
  if (auto ok = reserve(slot, layout); !ok) {
    return std::move(ok).error();
  }
  free_.pop_front();
  slot.layout_ = layout;
  slot.output_ = output_of(slot);
  slot.state_ = feeder_slot::state::writing;
  return &slot;
}

expected<void> device_feeder::submit(feeder_slot& slot, std::function<void()> on_device) {
  if (slot.state_ != feeder_slot::state::writing) {
    return misuse(options_.device,
                  "submit of slot " + std::to_string(slot.index_) + ", which was not acquired");
  }
  const int device = options_.device;
  auto guard = device_guard::enter(device);
  if (!guard) {
    return std::move(guard).error();
  }
  const auto bytes = slot.layout_.bytes();
  if (bytes > 0) {
    CONVEYOR_CUDA_TRY(device, cudaMemcpyAsync(slot.input_.data(), slot.staging_.data(), bytes,
                                              cudaMemcpyHostToDevice, stream_.get()));
  }
  if (auto ok = slot.copied_.record(stream_); !ok) {
    return ok;
  }
  if (options_.normalize && bytes > 0) {
    auto ok = launch_normalize(slot.input_.data(), uint8_shape(slot.layout_), *options_.normalize,
                               options_.normalized_type, slot.result_.data(), stream_);
    if (!ok) {
      return ok;
    }
  }
  if (auto ok = slot.done_.record(stream_); !ok) {
    return ok;
  }
  slot.recorded_ = true;
  slot.state_ = feeder_slot::state::submitted;
  if (on_device) {
    return enqueue_callback(stream_, std::move(on_device));
  }
  return {};
}

expected<bool> device_feeder::ready(const feeder_slot& slot) const {
  return slot.done_.ready();
}

expected<void> device_feeder::wait(const feeder_slot& slot) const {
  return slot.done_.synchronize();
}

expected<void> device_feeder::release(std::size_t index) {
  if (index >= slots_.size() || slots_[index].state_ == feeder_slot::state::free) {
    return misuse(options_.device,
                  "release of slot " + std::to_string(index) + ", which is not in use");
  }
  slots_[index].state_ = feeder_slot::state::free;
  free_.push_back(index);
  return {};
}

}  // namespace conveyor::cuda
