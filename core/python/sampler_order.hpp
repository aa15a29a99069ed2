#pragma once
/// The order a trainer's own sampler gave one epoch (conveyor.DataLoader with a sampler
/// Conveyor's order cannot stand for: a WeightedRandomSampler, a SubsetRandomSampler, a list):
/// the dataset indices of the epoch's positions, repeats allowed, as a file of little-endian
/// uint64 values ([python] order_file). The node's sample j is then dataset[order[j]].

#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/error.hpp"

namespace conveyor {

/// The indices in the regular file at `path` (read as read_bounded_file reads: at most the
/// machine's memory), each checked to be below `length` (len(dataset)). errc::invalid_config
/// naming the path and what is wrong: a size that is not a multiple of 8 or is 0, an index
/// past the dataset (with its position); the file's own errors as read_bounded_file's.
/// Thread-safe.
expected<std::vector<std::uint64_t>> read_sampler_order(const std::string& path,
                                                        std::uint64_t length);

}  // namespace conveyor
