#pragma once
/// A batch as a feeder hands it to a trainer: its fields (core/delivery/batch_blob.hpp) in one
/// buffer, plus the labels, ids and keys of its samples, in the same order. The buffer is in
/// host memory (`bytes`, or `external` memory such as a ring slot's or a mapped shared slot),
/// and, from a CUDA feeder, copied to the memory of a CUDA device (`device_data`).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/field_schema.hpp"
#include "core/batching/prepared_sample.hpp"
#include "core/delivery/batch_blob.hpp"
#include "core/delivery/slot_owner.hpp"

namespace conveyor {

/// Written by one feeder, then read-only while a trainer holds it. A feeder reuses its
/// buffers: the trainer must not touch a batch after releasing it.
struct host_batch {
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;  ///< batch number within the epoch
  int gpu = 0;
  std::uint64_t slot = 0;      ///< the feeder's buffer number, returned on release
  bool last_in_epoch = false;  ///< nothing follows for this GPU in this epoch
  /// The fields' names, kinds and collates (shared by every batch of the pipeline or feed).
  std::shared_ptr<const sample_schema> schema;
  std::vector<batch_field> fields;  ///< by schema index: what this batch holds, and where
  std::vector<std::uint8_t> bytes;  ///< the buffer, when the batch owns it; capacity is reused
  /// When set, the buffer lies here instead of in `bytes` (a slot of shared memory that the
  /// feeder collated into, or that a client mapped); `bytes` is empty.
  std::uint8_t* external = nullptr;
  bool read_only = false;  ///< the trainer must not write the fields (memory shared by jobs)
  /// -1: the fields are in host memory. Otherwise the CUDA device whose memory at
  /// `device_data` holds a copy of the buffer (complete when the batch is handed over); the
  /// host buffer still holds the lengths and offsets the trainer reads on the host.
  int device = -1;
  const void* device_data = nullptr;
  /// A field normalised on the device lies at `normalized` (device memory), as
  /// `normalized_type`, instead of in the buffer.
  std::optional<std::size_t> normalized_field;
  const void* normalized = nullptr;
  dtype normalized_type = dtype::float32;
  /// Set when the buffer lies in a ring's slot `slot`: keeps that memory alive while the batch
  /// is held, and is told when the trainer releases it (slot_owner.hpp).
  std::shared_ptr<slot_owner> owner;
  /// When the batch was ready for the trainer (monotonic_clock.hpp): the feeder's hand-over,
  /// or a node's publication of a served batch.
  std::uint64_t ready_ns = 0;
  std::vector<std::int32_t> labels;  ///< the "label" field, when the schema has one (int32)
  std::vector<std::uint64_t> sample_ids;
  std::vector<std::string> keys;

  std::size_t size() const noexcept { return sample_ids.size(); }
  /// The host buffer.
  const std::uint8_t* host() const noexcept { return external ? external : bytes.data(); }
  /// Where field `i`'s values are for the trainer (device memory for a device batch).
  const void* values_of(std::size_t i) const noexcept;
  /// Field `i`'s dtype as the trainer reads it.
  dtype type_of(std::size_t i) const noexcept;
};

/// Fills `into`'s metadata from `plan`: epoch, index, gpu, last_in_epoch, sample ids, keys,
/// and the labels from `schema`'s "label" field (int32 scalars), if it has one. Leaves the
/// buffer alone.
void describe_batch(const batch_plan& plan, const sample_schema& schema, host_batch& into);

/// Memory a feeder writes batches into instead of buffers of its own: slot i's buffer starts
/// at buffers[i], with room for `capacity` bytes. Owned by whoever set it up (a shared-memory
/// feed), which keeps it mapped while the pipeline runs.
struct external_slots {
  std::vector<std::uint8_t*> buffers;
  std::size_t capacity = 0;
};

}  // namespace conveyor
