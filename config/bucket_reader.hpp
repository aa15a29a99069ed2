#pragma once
/// Internal to config/: bucketing by length (`batching.bucket_by`, `bucket_axis`,
/// `bucket_boundaries`, `bucket_count`), read with the [batching] section and checked against the
/// fields the transform chain makes once those are known.

#include "config/schema_reader.hpp"
#include "config/topology.hpp"
#include "core/base/field_schema.hpp"

namespace conveyor::config_detail {

/// Reads the bucketing keys of [batching] into `out`: boundaries strictly increasing and
/// >= 1, only with bucket_by (without them, bucket_count buckets are learned); bucket_by only
/// for the latency_aware policy (in_order batches follow the sampler's order). Problems go to
/// the section's report.
void read_bucketing(table_reader& section, batching_config& out);

/// Checks `batching.bucket_by` against the chain's fields: it names one, bucket_axis is one
/// of its axes, and its extent there varies (a fixed extent puts every sample in one bucket).
/// Reported at the key in root's report.
void check_bucketing(table_reader& root, const batching_config& batching,
                     const sample_schema& schema);

}  // namespace conveyor::config_detail
