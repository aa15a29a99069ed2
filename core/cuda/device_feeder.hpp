#pragma once
/// The CUDA side of a feeder, with no actors in it: a ring of batch slots, each a pinned host
/// staging buffer that samples are written into in place, device buffers, and events; one
/// stream. A batch goes to the GPU with one cudaMemcpyAsync, then (optionally) the normalize
/// kernel turns its uint8 samples into float32 or bfloat16 NCHW on the device.
///
///   auto slot = feeder.acquire(layout);           // a free slot, sized for the batch
///   memcpy(slot->sample(i), ..., layout.sample_bytes());   // each sample in its place
///   feeder.submit(*slot, on_device);              // copy (+ kernel), asynchronously
///   ... on_device runs; the trainer reads slot->output() ...
///   feeder.release(slot->index());                // the slot returns to the ring
///
/// No CUDA header needed to use it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/tensor.hpp"
#include "core/cuda/cuda_buffer.hpp"
#include "core/cuda/cuda_event.hpp"
#include "core/cuda/cuda_stream.hpp"
#include "core/transforms/normalize_math.hpp"

namespace conveyor::cuda {

struct device_feeder_options {
  int device = 0;
  std::size_t slots = 3;  ///< pipeline.prefetch_batches + 1
  /// With a value, batches arrive as 3-channel uint8 and leave normalised with these
  /// coefficients as `normalized_type` (float32 or bfloat16); without, bytes pass unchanged.
  std::optional<normalize_coefficients> normalize;
  dtype normalized_type = dtype::float32;
};

/// What the host side of one batch holds: `samples` tensors of one shape and type, one after
/// another. Samples that are not uint8 must be CHW.
struct batch_layout {
  dtype type = dtype::uint8;
  int samples = 0;
  int channels = 0;
  int height = 0;
  int width = 0;
  pixel_layout layout = pixel_layout::chw;

  std::size_t sample_bytes() const noexcept {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(height) *
           static_cast<std::size_t>(width) * size_of(type);
  }
  std::size_t bytes() const noexcept { return sample_bytes() * static_cast<std::size_t>(samples); }
};

/// A batch in device memory: N x C x H x W elements of `type`, contiguous.
struct device_tensor {
  const void* data = nullptr;  ///< null for an empty batch
  dtype type = dtype::float32;
  std::array<int, 4> shape{0, 0, 0, 0};
  int device = -1;
};

/// One slot of the ring. The feeder owns it; its user writes samples between acquire and
/// submit and reads output() between completion and release.
class feeder_slot {
 public:
  std::size_t index() const noexcept { return index_; }
  const batch_layout& layout() const noexcept { return layout_; }
  /// Pinned memory for sample `i` (< layout().samples), layout().sample_bytes() long.
  std::uint8_t* sample(std::size_t i) noexcept {
    return staging_.data() + i * layout_.sample_bytes();
  }
  /// The batch on the device; its contents are complete once the slot is ready.
  device_tensor output() const noexcept { return output_; }

 private:
  friend class device_feeder;
  enum class state : std::uint8_t { free, writing, submitted };

  std::size_t index_ = 0;
  state state_ = state::free;
  batch_layout layout_;
  device_tensor output_;
  pinned_buffer staging_;
  device_buffer input_;   ///< the copy's destination
  device_buffer result_;  ///< the kernel's output (with normalize)
  cuda_event copied_;     ///< the staging buffer has been read: it may be written again
  cuda_event done_;       ///< the output is complete
  bool recorded_ = false;
};

/// Move-only. Not thread-safe: one owner thread (CUDA's current device is per thread), except
/// that the completion callbacks run on a CUDA thread.
class device_feeder {
 public:
  /// Makes the stream and the slots' events on options.device; buffers are allocated by the
  /// first acquire (when the batch size is known). errc::invalid_argument for 0 slots or a
  /// normalized_type other than float32 or bfloat16; CUDA errors name the device and call.
  static expected<device_feeder> create(const device_feeder_options& options);

  device_feeder(device_feeder&&) = default;
  device_feeder& operator=(device_feeder&&) = delete;
  device_feeder(const device_feeder&) = delete;
  device_feeder& operator=(const device_feeder&) = delete;
  /// Waits for the queued work (and completion callbacks) before anything is freed.
  ~device_feeder();

  /// The free slot released longest ago, its buffers grown to hold `layout` (they never
  /// shrink); blocks while a previous copy still reads its staging buffer. errc::invalid_argument
  /// when no slot is free (the caller's credits are wrong) or the layout does not suit the
  /// options; CUDA errors (allocation) name the device and size.
  expected<feeder_slot*> acquire(const batch_layout& layout);

  /// Queues the slot's copy to the device, the normalize kernel if configured, and then
  /// `on_device`, which runs on a CUDA thread once the output is complete, in submission
  /// order. on_device must not call CUDA and should be quick (it holds the stream). The slot's
  /// samples must all be written.
  expected<void> submit(feeder_slot& slot, std::function<void()> on_device = {});

  /// Whether a submitted slot's output is complete.
  expected<bool> ready(const feeder_slot& slot) const;
  /// Blocks until a submitted slot's output is complete.
  expected<void> wait(const feeder_slot& slot) const;

  /// Returns slot `index` to the ring. The device buffers are written again by a later
  /// batch's work on this feeder's stream: the releaser must be done with output() (work it
  /// queued on another stream must have completed). errc::invalid_argument for a slot that
  /// is not in use.
  expected<void> release(std::size_t index);

  std::size_t slots() const noexcept { return slots_.size(); }
  std::size_t free_slots() const noexcept { return free_.size(); }
  feeder_slot& slot(std::size_t index) noexcept { return slots_[index]; }
  int device() const noexcept { return options_.device; }
  const cuda_stream& stream() const noexcept { return stream_; }

 private:
  explicit device_feeder(const device_feeder_options& options) : options_(options) {}
  expected<void> check(const batch_layout& layout) const;
  expected<void> reserve(feeder_slot& slot, const batch_layout& layout);
  device_tensor output_of(const feeder_slot& slot) const;

  device_feeder_options options_;
  cuda_stream stream_;  // first member made, last destroyed
  std::vector<feeder_slot> slots_;
  std::deque<std::size_t> free_;
};

}  // namespace conveyor::cuda
