#pragma once
/// How one batch lies in a slot of a feed's shared region. A region holds `slots` slots of
/// slot_bytes each, every slot page-aligned:
///
///   offset 0              header: samples, keys_used, published_ns (CLOCK_MONOTONIC)
///   tensor_offset (64)    N x C x H x W elements (the feeder collates straight here)
///   labels_offset         int32 per sample
///   ids_offset            uint64 per sample
///   keys_offset           per sample: uint16 length, then that many bytes; key_bytes in all
///
/// Both sides compute the layout from the same numbers (batch size, sample geometry, key
/// room), which travel in the `attached` message; host byte order (one machine). Keys are for
/// logs and reports: a batch whose keys do not fit in key_bytes gets the rest cut short.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/sample_geometry.hpp"

namespace conveyor {

/// Plain value; pure functions.
struct slot_layout {
  std::uint64_t batch_size = 0;
  sample_geometry sample;
  std::uint32_t key_bytes = 0;
  std::size_t tensor_offset = 0;
  std::size_t tensor_capacity = 0;  ///< batch_size samples
  std::size_t labels_offset = 0;
  std::size_t ids_offset = 0;
  std::size_t keys_offset = 0;
  std::size_t slot_bytes = 0;  ///< a multiple of the page size (4096)

  static slot_layout make(std::uint64_t batch_size, const sample_geometry& sample,
                          std::uint32_t key_bytes);
};

/// The key room the node gives each slot: 256 bytes a sample.
std::uint32_t default_key_bytes(std::uint64_t batch_size);

/// What a slot holds besides its tensor.
struct slot_contents {
  std::vector<std::int32_t> labels;
  std::vector<std::uint64_t> sample_ids;
  std::vector<std::string> keys;
  std::uint64_t published_ns = 0;  ///< when the node handed the batch out (CLOCK_MONOTONIC)
};

/// Node side: writes the header, labels, ids and keys of a batch of labels.size() samples
/// (<= batch_size; ids and keys of the same length) into `slot`. The tensor is the feeder's.
void write_slot(const slot_layout& layout, std::uint8_t* slot, const slot_contents& contents);

/// Client side: reads them back for a batch the node said has `samples` samples. Never reads
/// outside the slot: errc::invalid_argument when the header disagrees with `samples` or the
/// layout (a node and client of different releases, or a slot written over).
expected<slot_contents> read_slot(const slot_layout& layout, const std::uint8_t* slot,
                                  std::uint32_t samples);

}  // namespace conveyor
