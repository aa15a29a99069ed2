#pragma once
/// Starting a pipeline from a topology already loaded and validated: for Conveyor's own apps
/// (conveyor-node), which read more of the topology than a trainer does. Trainers use
/// pipeline::open or pipeline::from_toml (include/conveyor/pipeline.hpp).

#include <memory>
#include <string>
#include <vector>

#include "api/resolve_fields.hpp"
#include "config/topology.hpp"
#include "conveyor/pipeline.hpp"
#include "core/delivery/client_waits.hpp"
#include "core/delivery/host_batch.hpp"
#include "core/storage/sample_source.hpp"

namespace conveyor {

/// How create_pipeline opens a topology's pipeline; by default from the start, with the
/// feeders' own buffers and the dataset opened anew.
struct pipeline_opening {
  /// Per GPU slot, the shared memory its feeder collates into (a served node, core/serving/);
  /// empty: the feeders' own buffers.
  std::vector<external_slots> feed_memory;
  /// Go on from this state (pipeline::open says how), named `resume_source` in errors (its
  /// file, say); null: from the start.
  const run_state* resume = nullptr;
  std::string resume_source = "the resume state";
  /// The topology's dataset, opened already (open_dataset in api/resolve_topology.hpp) by a
  /// caller that needed it first: not opened again (an S3 manifest fetched, a WebDataset's
  /// tars walked twice). Null: opened here.
  std::shared_ptr<const sample_source> dataset;
  /// The topology's fields, resolved already for host feeders (resolve_fields(t, false)) by a
  /// caller that needed them first: a Python Dataset's workers are not started and probed a
  /// second time. Null: resolved here.
  std::shared_ptr<const resolved_fields> fields;
  /// A served node's trainer processes' waits (its feed server adds them): on /metrics and the
  /// live page beside the feeds' own. Null: not served.
  std::shared_ptr<const client_waits> served_waits;
};

/// errc::invalid_config (naming the key) when the topology cannot run here, e.g. a dataset
/// path that does not open or a GPU that does not exist.
expected<pipeline> create_pipeline(const topology& t, pipeline_opening how = {});

}  // namespace conveyor
