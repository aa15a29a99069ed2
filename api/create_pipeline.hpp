#pragma once
/// Starting a pipeline from a topology already loaded and validated: for Conveyor's own apps
/// (conveyor-node), which read more of the topology than a trainer does. Trainers use
/// pipeline::open or pipeline::from_toml (include/conveyor/pipeline.hpp).

#include "config/topology.hpp"
#include "conveyor/pipeline.hpp"
#include "core/delivery/host_batch.hpp"

namespace conveyor {

/// errc::invalid_config (naming the key) when the topology cannot run here, e.g. a dataset
/// path that does not open or a GPU that does not exist. `feed_memory`: per GPU slot, the
/// shared memory its feeder collates into (a served node, core/serving/); empty: the
/// feeders' own buffers. `resume`: go on from that state (pipeline::open says how), named
/// `source` in errors (its file, say); null: from the start.
expected<pipeline> create_pipeline(const topology& t, std::vector<external_slots> feed_memory = {},
                                   const run_state* resume = nullptr,
                                   const std::string& source = "the resume state");

}  // namespace conveyor
