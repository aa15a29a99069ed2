#include "core/transforms/chain_fields.hpp"

namespace conveyor {

chain_fields::chain_fields() {
  fields_.push_back({std::string(label_field_name),
                     {field_kind::tensor, dtype::int32, 0, {}},
                     false,
                     true,
                     "the record"});
}

expected<std::size_t> chain_fields::read(std::string_view name) const {
  std::string there;
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (!fields_[i].live) {
      continue;
    }
    if (fields_[i].name == name) {
      return i;
    }
    there += (there.empty() ? "'" : ", '") + fields_[i].name + "'";
  }
  return error{errc::invalid_config, "field '" + std::string(name) +
                                         "' is not made by any step before it (the fields "
                                         "there are " +
                                         there + ")"};
}

std::size_t chain_fields::write(std::string_view name, const field_type& type, bool image) {
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) {
      fields_[i] = {std::string(name), type, image, true, step_};
      return i;
    }
  }
  fields_.push_back({std::string(name), type, image, true, step_});
  return fields_.size() - 1;
}

void chain_fields::drop(std::size_t index) {
  fields_[index].live = false;
}

expected<sample_schema> chain_fields::schema() const {
  sample_schema out;
  for (const auto& f : fields_) {
    if (!f.live) {
      continue;
    }
    if (f.image) {
      return error{errc::invalid_config,
                   "field '" + f.name +
                       "' is still an image when the chain ends: end with to_uint8 or normalize "
                       "on it (they turn an image into the channels x height x width array a "
                       "batch carries)"};
    }
    out.fields.push_back({f.name, f.type, {}});
  }
  return out;
}

std::vector<int> chain_fields::schema_positions() const {
  std::vector<int> out;
  int next = 0;
  for (const auto& f : fields_) {
    out.push_back(f.live ? next++ : -1);
  }
  return out;
}

expected<std::size_t> read_array(const chain_fields& fields, std::string_view op,
                                 const std::string& name, std::optional<dtype> type,
                                 std::optional<int> rank) {
  auto index = fields.read(name);
  if (!index) {
    return index;
  }
  const auto& t = fields.type(*index);
  if (fields.image(*index) || t.kind != field_kind::tensor || (type && t.type != *type) ||
      (rank && t.rank != *rank)) {
    std::string want = type ? std::string(name_of(*type)) + " " : std::string();
    want += rank ? "array of rank " + std::to_string(*rank) : "array";
    return error{errc::invalid_config,
                 std::string(op) + ": field '" + name + "' is " + describe(t) +
                     (fields.image(*index) ? " (an image)" : "") + " (made by " +
                     fields.made_by(*index) + "); it needs " + want};
  }
  return index;
}

}  // namespace conveyor
