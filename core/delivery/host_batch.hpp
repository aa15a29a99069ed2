#pragma once
/// A batch as a feeder hands it to a trainer: one N x C x H x W tensor plus the labels, ids and
/// keys of its samples, in the same order. The tensor is in host memory (`bytes`, or `external`
/// memory such as a ring slot's), or, from a CUDA feeder, in the memory of a CUDA device
/// (`device_data`).

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/tensor.hpp"
#include "core/batching/prepared_sample.hpp"
#include "core/delivery/slot_owner.hpp"
#include "core/transforms/normalize_table.hpp"

namespace conveyor {

/// Written by one feeder, then read-only while a trainer holds it. A feeder reuses its
/// buffers: the trainer must not touch a batch after releasing it.
struct host_batch {
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;  ///< batch number within the epoch
  int gpu = 0;
  std::uint64_t slot = 0;      ///< the feeder's buffer number, returned on release
  bool last_in_epoch = false;  ///< nothing follows for this GPU in this epoch
  dtype type = dtype::float32;
  std::array<int, 4> shape{0, 0, 0, 0};  ///< N, C, H, W
  std::vector<std::uint8_t> bytes;       ///< N*C*H*W elements of `type`; capacity is reused
  /// When set, the tensor lies here instead of in `bytes` (a slot of shared memory that the
  /// feeder collated into, or that a client mapped); `bytes` is empty.
  std::uint8_t* external = nullptr;
  bool read_only = false;  ///< the trainer must not write the tensor (memory shared by jobs)
  /// -1: the tensor is `bytes`. Otherwise the CUDA device whose memory at `device_data` holds
  /// it (complete when the batch is handed over; `bytes` is empty).
  int device = -1;
  const void* device_data = nullptr;
  /// Set when the tensor lies in a ring's slot `slot`: keeps that memory alive while the batch
  /// is held, and is told when the trainer releases it (slot_owner.hpp).
  std::shared_ptr<slot_owner> owner;
  /// When the batch was ready for the trainer (monotonic_clock.hpp): the feeder's hand-over,
  /// or a node's publication of a served batch.
  std::uint64_t ready_ns = 0;
  std::vector<std::int32_t> labels;
  std::vector<std::uint64_t> sample_ids;
  std::vector<std::string> keys;

  std::size_t size() const noexcept { return labels.size(); }
};

/// Every sample of `plan` has the shape and dtype of the first; errc::invalid_config names the
/// first sample that differs (the transform chain does not produce a fixed size).
expected<void> check_uniform(const batch_plan& plan);

/// Fills `into`'s metadata from `plan`: epoch, index, gpu, last_in_epoch, type, shape (N x C x H
/// x W of the first sample; zeros for an empty plan), labels, sample ids and keys. Leaves the
/// tensor's memory alone.
void describe_batch(const batch_plan& plan, host_batch& into);

/// Copies the plan's tensors, in order, to `dest`: sample i at i times the bytes of a sample.
/// Precondition: check_uniform(plan), and room for all of them at `dest`.
void write_samples(const batch_plan& plan, std::uint8_t* dest);

/// Normalises the plan's uint8 3-channel CHW tensors through `table` into float32 CHW at
/// `dest`, in order (sample i at i times 4 x its elements): the final normalize of the chain,
/// run as the samples are written into the batch (one pass, no float copy). Preconditions:
/// check_uniform(plan), uint8 tensors of 3 channels, room for the floats at `dest` (aligned
/// for float).
void write_normalized_samples(const batch_plan& plan, const normalize_table& table,
                              std::uint8_t* dest);

/// Memory a feeder writes batches into instead of buffers of its own: slot i's tensor starts at
/// tensors[i], with room for `capacity` bytes. Owned by whoever set it up (a shared-memory
/// feed), which keeps it mapped while the pipeline runs.
struct external_slots {
  std::vector<std::uint8_t*> tensors;
  std::size_t capacity = 0;
};

}  // namespace conveyor
