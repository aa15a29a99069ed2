#pragma once
/// The batcher actor: the pipeline's coordinator around batcher_core (which holds all of its
/// logic). It dispatches tickets to readers, collects prepared samples, sends batches to
/// feeders with credit, retries or quarantines failed samples, re-issues the samples of a
/// worker its supervisor reports down, passes handed-off samples to straggler actors and
/// publishes its ledger figures.

#include <caf/actor_system.hpp>

#include <functional>
#include <memory>
#include <vector>

#include "actors/reporting.hpp"
#include "core/batching/batcher_core.hpp"
#include "core/batching/quarantine_report.hpp"
#include "core/delivery/pipeline_status.hpp"
#include "messages/pipeline_actors.hpp"

namespace conveyor {

struct batcher_options {
  batcher_settings settings;
  batching_policy policy = batching_policy::in_order;
  std::shared_ptr<pipeline_status> status;
  reporting report;
  batcher_core::sample_namer name_sample;         ///< file, or shard and record
  std::shared_ptr<quarantine_report> quarantine;  ///< null: no report file
  /// Told the samples the readers will be handed next, a window ahead of the dispatches
  /// (batcher_core::take_read_ahead), in order: a dataset in an object store fetches them
  /// ahead (sample_source::will_read). Null: nobody is.
  std::function<void(std::uint64_t epoch, const std::vector<std::uint64_t>& ids)> will_read{};
};

batcher_actor spawn_batcher(caf::actor_system& sys, batcher_options options);

}  // namespace conveyor
