#pragma once
/// Internal to config/: one reader per section of a topology. Each reads its keys with their
/// checks into a struct that holds the defaults; problems go to the reader's report. The
/// caller rejects the keys a reader did not ask for.

#include "config/schema_reader.hpp"
#include "config/topology.hpp"

namespace conveyor::config_detail {

/// The top-level `gpus` of `root`: "auto", [distinct ids >= 0] or a count >= 1.
gpu_selection read_gpus(table_reader& root);

dataset_config read_dataset(table_reader& section);
pipeline_config read_pipeline(table_reader& section);
batching_config read_batching(table_reader& section);
trainer_config read_trainer(table_reader& section);
monitor_config read_monitor(table_reader& section);
serve_config read_serve(table_reader& section);
cache_config read_cache(table_reader& section);
s3_config read_s3(table_reader& section);
python_config read_python(table_reader& section);
/// [python] of a topology whose steps include a Python step (and whose dataset is no Python
/// Dataset): interpreter, start_timeout_s and hang_timeout_s, its workers' (the rest is a
/// Python Dataset's).
python_config read_python_for_steps(table_reader& section);
cluster_config read_cluster(table_reader& section);
supervision_config read_supervision(table_reader& section);
fault_config read_faults(table_reader& section);

}  // namespace conveyor::config_detail
