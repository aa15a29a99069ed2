#pragma once
/// A batch in host memory, as a feeder hands it to a trainer: one N x C x H x W tensor plus
/// the labels, ids and keys of its samples, in the same order.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/prepared_sample.hpp"
#include "core/tensor.hpp"

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
  std::vector<std::int32_t> labels;
  std::vector<std::uint64_t> sample_ids;
  std::vector<std::string> keys;

  std::size_t size() const noexcept { return labels.size(); }
};

/// Copies the plan's tensors into `into` (reusing its buffers) and fills its metadata.
/// Every sample must have the same shape and dtype; errc::invalid_config names the first
/// sample that differs (the transform chain does not produce a fixed size).
expected<void> collate(const batch_plan& plan, host_batch& into);

}  // namespace conveyor
