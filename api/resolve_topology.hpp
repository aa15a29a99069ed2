#pragma once
/// From a validated topology to a runnable pipeline_spec: opens the dataset, builds the
/// transform chain and resolves every "auto". Its errors are configuration errors (the node
/// app exits with code 2 on them): they name the key and the file or path concerned.

#include "actors/pipeline_runtime.hpp"
#include "api/resolve_fields.hpp"
#include "config/topology.hpp"
#include "conveyor/error.hpp"

namespace conveyor {

/// Cores of this machine (at least 1).
int hardware_cores() noexcept;

/// "auto" pipeline.readers for `preprocessors`: one reader per 8 preprocessors (1 up to 8, 2
/// for 9 to 16). Pure.
int auto_readers(int preprocessors) noexcept;
/// "auto" pipeline.per_worker_limit for `preprocessors`: 2 under 8, 4 from 8. Pure.
/// Why both: a preprocessor's next sample comes from a reader only after it reported the last
/// one done (the batcher, then the reader's mailbox, then the read), and that round trip grows
/// with the preprocessors one reader serves; on 16 cores, one reader and 2 samples per
/// preprocessor left the preprocessors waiting 8% of the time, the node at 0.93 of the bare
/// loop, and 2 readers with 4 samples each brought it to 0.97 (bench/results/gpu.md).
int auto_per_worker_limit(int preprocessors) noexcept;

/// The counts of a [pipeline] that may be "auto", resolved.
struct pipeline_counts {
  int preprocessors = 1;
  int readers = 1;
  int per_worker_limit = 2;
  int stragglers = 1;
};
/// The counts of `p`, each "auto" resolved for this machine: preprocessors and stragglers one
/// per core (hardware_cores()), readers and per_worker_limit for those preprocessors; a number
/// `p` gives is kept. Not pure: reads the machine's cores.
pipeline_counts resolve_counts(const pipeline_config& p) noexcept;
/// The workers the pipeline spawns: resolve_counts(p), and with pipeline.autotune the most the
/// autotuner may use (api/resolve_autotune.hpp): 2 x hardware_cores() preprocessors (or more
/// when configured), as many straggler actors where pipeline.stragglers is "auto", twice the
/// auto readers of those preprocessors (or more when configured). Not pure (the cores).
pipeline_counts spawned_counts(const pipeline_config& p) noexcept;

/// The dataset of `t`: local files (core/storage/sample_source.hpp), or objects in a store for a
/// dataset.path of "s3://bucket/prefix" ([s3]; core/remote/open_remote_dataset.hpp).
/// invalid_config naming the topology, dataset.path and what went wrong. Logs the dataset's
/// size once opened (one line per open).
expected<std::shared_ptr<const sample_source>> open_dataset(const topology& t);

/// The spec of `t`, on `dataset` when it was opened already (open_dataset(t)), with `fields`
/// when they were resolved already for host feeders (resolve_fields(t, false)); null: opened,
/// resolved here.
expected<pipeline_spec> resolve_topology(const topology& t,
                                         std::shared_ptr<const sample_source> dataset = nullptr,
                                         std::shared_ptr<const resolved_fields> fields = nullptr);

}  // namespace conveyor
