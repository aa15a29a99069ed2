#include "api/resolve_fields.hpp"

#include "api/resolve_python.hpp"
#include "core/transforms/normalize_placement.hpp"

namespace conveyor {
namespace {

error bad_collate(const topology& t, const std::string& field, const std::string& why) {
  return {errc::invalid_config, t.source + ": collate." + field + ": " + why};
}

// `chain`'s fields with the topology's [collate] applied (each checked to be a field there).
expected<sample_schema> with_collates(const topology& t, sample_schema schema) {
  for (const auto& [name, spec] : t.collate) {
    auto i = schema.index_of(name);
    if (!i) {
      std::string there;
      for (const auto& f : schema.fields) {
        there += (there.empty() ? "" : ", ") + f.name;
      }
      return bad_collate(t, name,
                         "no step makes a field '" + name + "' (the fields are " + there + ")");
    }
    schema.fields[*i].collate = spec;
  }
  return schema;
}

// The chain of `t`'s steps (after the normalize that moves to the feeders), or of its Python
// Dataset, with the collates of its fields.
expected<std::pair<transform_chain, sample_schema>> chain_of(
    const topology& t, const std::vector<transform_spec>& steps) {
  if (t.dataset.format == dataset_format::python) {
    auto python = resolve_python_chain(t);
    if (!python) {
      return python.error();
    }
    return std::make_pair(python->chain, python->schema);
  }
  auto bound = steps;
  if (auto ok = bind_topology_python_steps(t, bound); !ok) {
    return ok.error();
  }
  auto chain = transform_chain::build(bound);
  if (!chain) {
    return error{chain.error().code(), t.source + ": transform: " + chain.error().message()};
  }
  auto schema = with_collates(t, chain->schema());
  if (!schema) {
    return schema.error();
  }
  return std::make_pair(*chain, *schema);
}

}  // namespace

expected<resolved_fields> resolve_fields(const topology& t, bool normalize_on_device) {
  auto placed = move_normalize_to_feeder(t.transforms);
  auto built = chain_of(t, placed.cpu_chain);
  if (!built) {
    return built.error();
  }
  const auto& chain = built->first;
  auto& schema = built->second;
  resolved_fields out{chain, nullptr, nullptr, {}, placed.in_feeder, 0};
  auto batch = schema;
  if (placed.in_feeder) {
    out.normalize_field = *schema.index_of(placed.in_feeder->field);
    if (schema.fields[out.normalize_field].collate.mode == collate_mode::ragged) {
      return bad_collate(t, placed.in_feeder->field,
                         "normalize writes this image: it is stacked or padded, not ragged "
                         "(its rows would be its channels)");
    }
    if (!normalize_on_device) {
      batch.fields[out.normalize_field].type.type = dtype::float32;
    }
  }
  auto layout = blob_layout::make(batch, static_cast<std::uint64_t>(t.pipeline.batch_size));
  if (!layout) {
    return error{errc::invalid_config, t.source + ": collate: " + layout.error().message()};
  }
  out.layout = std::move(*layout);
  out.schema = std::make_shared<const sample_schema>(std::move(schema));
  out.batch_schema = std::make_shared<const sample_schema>(std::move(batch));
  return out;
}

}  // namespace conveyor
