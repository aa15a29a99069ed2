#include "config/collate_reader.hpp"

namespace conveyor::config_detail {
namespace {

// An extent, multiple or row count at most: 2^40 (a batch's room is refused past 1 TiB anyway;
// this keeps rounding an extent up to a multiple from overflowing).
constexpr double max_extent = 1099511627776.0;

// One field's [collate.<name>], for a field of type `type`.
collate_spec read_field(table_reader& table, const field_type& type) {
  collate_spec c;
  c.mode =
      table.choice("mode", c.mode, {collate_mode::stack, collate_mode::pad, collate_mode::ragged});
  c.multiple = table.integer<std::int64_t>("multiple", c.multiple, closed(1, max_extent));
  c.value = table.number("value", c.value, any_number());
  c.max_values = table.integer<std::int64_t>("max_values", c.max_values, closed(1, max_extent));
  if (const auto* value = table.find("max_shape")) {
    auto extents = table.integers("max_shape", {}, closed(1, max_extent), host_array::max_rank);
    if (extents.size() != static_cast<std::size_t>(type.rank)) {
      table.fail(*value, "max_shape",
                 "needs one extent per axis of the field (" + describe(type) + ")");
    }
    for (std::size_t i = 0; i < extents.size() && i < c.max_shape.size(); ++i) {
      c.max_shape[i] = extents[i];
    }
  }
  if (c.mode == collate_mode::pad) {  // fixed axes pad to their own extent
    for (int i = 0; i < type.rank; ++i) {
      auto& max = c.max_shape[static_cast<std::size_t>(i)];
      const auto fixed = type.shape[static_cast<std::size_t>(i)];
      if (max == 0 && fixed != varies) {
        max = fixed;
      }
    }
  }
  return c;
}

}  // namespace

std::vector<std::pair<std::string, collate_spec>> read_collate(table_reader& root,
                                                               const sample_schema& schema) {
  std::vector<std::pair<std::string, collate_spec>> out;
  table_reader section = root.table("collate");
  if (schema.fields.empty()) {
    section.keys();  // the chain failed, and said why: its fields are unknown
    return out;
  }
  for (const auto& name : section.keys()) {
    const auto* field = schema.find(name);
    table_reader table = section.table(name);
    if (field == nullptr) {
      std::string there;
      for (const auto& f : schema.fields) {
        there += (there.empty() ? "" : ", ") + f.name;
      }
      table.fail_here("no step makes a field '" + name + "' (the fields are " + there + ")");
      continue;
    }
    out.emplace_back(name, read_field(table, field->type));
    table.reject_unknown_keys();
  }
  return out;
}

}  // namespace conveyor::config_detail
