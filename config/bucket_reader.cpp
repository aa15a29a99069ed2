#include "config/bucket_reader.hpp"

#include <string>

namespace conveyor::config_detail {
namespace {

// Reports the first boundary that does not exceed the one before it.
void check_increasing(table_reader& section, const std::vector<std::int64_t>& boundaries) {
  for (std::size_t i = 1; i < boundaries.size(); ++i) {
    if (boundaries[i] <= boundaries[i - 1]) {
      section.fail(*section.find("bucket_boundaries"), "bucket_boundaries",
                   "must increase strictly (element " + std::to_string(i) + ", " +
                       std::to_string(boundaries[i]) + ", follows " +
                       std::to_string(boundaries[i - 1]) + ")");
      return;
    }
  }
}

}  // namespace

void read_bucketing(table_reader& section, batching_config& out) {
  out.bucket_by = section.string("bucket_by", out.bucket_by);
  out.bucket_axis =
      section.integer("bucket_axis", out.bucket_axis, closed(0, host_array::max_rank - 1));
  out.bucket_boundaries =
      section.integers("bucket_boundaries", out.bucket_boundaries, at_least(1), 256);
  out.bucket_count = section.integer("bucket_count", out.bucket_count, closed(2, 256));
  check_increasing(section, out.bucket_boundaries);
  const auto* by = section.find("bucket_by");
  const auto* boundaries = section.find("bucket_boundaries");
  if (out.bucket_by.empty() && !out.bucket_boundaries.empty()) {
    section.fail(*boundaries, "bucket_boundaries",
                 "needs bucket_by (the field whose length picks the bucket)");
    return;
  }
  if (!out.bucket_by.empty() && out.policy != batching_policy::latency_aware) {
    section.fail(*by, "bucket_by",
                 "needs policy = \"latency_aware\" (in_order batches follow the sampler's "
                 "order, whatever the samples' lengths)");
  }
}

void check_bucketing(table_reader& root, const batching_config& batching,
                     const sample_schema& schema) {
  if (batching.bucket_by.empty() || schema.fields.empty()) {
    return;  // none, or the chain failed and said why
  }
  table_reader section = root.table("batching");
  const auto* by = section.find("bucket_by");
  const auto* field = schema.find(batching.bucket_by);
  if (field == nullptr) {
    std::string there;
    for (const auto& f : schema.fields) {
      there += (there.empty() ? "" : ", ") + f.name;
    }
    section.fail(
        *by, "bucket_by",
        "no step makes a field '" + batching.bucket_by + "' (the fields are " + there + ")");
    return;
  }
  const auto& type = field->type;
  if (batching.bucket_axis >= type.rank) {
    const auto* axis = section.find("bucket_axis");
    section.fail(axis != nullptr ? *axis : *by, axis != nullptr ? "bucket_axis" : "bucket_by",
                 "'" + field->name + "' (" + describe(type) + ") has no axis " +
                     std::to_string(batching.bucket_axis));
    return;
  }
  const auto extent = type.shape[static_cast<std::size_t>(batching.bucket_axis)];
  if (extent != varies) {
    section.fail(*by, "bucket_by",
                 "'" + field->name + "' (" + describe(type) + ") has the same extent on axis " +
                     std::to_string(batching.bucket_axis) + " in every sample (" +
                     std::to_string(extent) + "): every sample would share one bucket");
  }
}

}  // namespace conveyor::config_detail
