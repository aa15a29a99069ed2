#pragma once
/// From a validated topology to a runnable pipeline_spec: opens the dataset, builds the
/// transform chain and resolves every "auto". Its errors are configuration errors (the node
/// app exits with code 2 on them): they name the key and the file or path concerned.

#include "actors/pipeline_runtime.hpp"
#include "config/topology.hpp"
#include "conveyor/error.hpp"

namespace conveyor {

/// Cores of this machine (at least 1).
int hardware_cores() noexcept;

/// The dataset of `t`: local files (core/storage/sample_source.hpp), or objects in a store for a
/// dataset.path of "s3://bucket/prefix" ([s3]; core/remote/open_remote_dataset.hpp).
/// invalid_config naming the topology, dataset.path and what went wrong. Logs the dataset's
/// size once opened (one line per open).
expected<std::shared_ptr<const sample_source>> open_dataset(const topology& t);

/// The spec of `t`, on `dataset` when it was opened already (open_dataset(t)); null: opened here.
expected<pipeline_spec> resolve_topology(const topology& t,
                                         std::shared_ptr<const sample_source> dataset = nullptr);

}  // namespace conveyor
