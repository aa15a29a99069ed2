#pragma once
/// dataset.shuffle, shuffle_block and shuffle_span, resolved on the dataset opened: the
/// sample_order (core/batching/epoch_order.hpp) every epoch's order is drawn from, and a run's
/// resume states name.

#include "config/topology.hpp"
#include "conveyor/error.hpp"
#include "core/batching/epoch_order.hpp"
#include "core/storage/sample_source.hpp"

namespace conveyor {

/// The order of `t` on `dataset`. For blocks: a block of dataset.shuffle_block bytes holds
/// shuffle_block x samples / stored bytes samples (at least 1), so that blocks of records of
/// varied sizes hold that many bytes on average; invalid_config naming dataset.shuffle_block
/// for a block larger than the dataset's largest shard (its shards' stored bytes: a block that
/// big would span several, and be fetched in pieces). O(samples).
expected<sample_order> resolve_order(const topology& t, const sample_source& dataset);

}  // namespace conveyor
