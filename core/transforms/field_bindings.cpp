#include "core/transforms/field_bindings.hpp"

namespace conveyor {

const field_binding* find_binding(const std::vector<field_binding>& in, std::string_view name) {
  for (const auto& b : in) {
    if (b.name == name) {
      return &b;
    }
  }
  return nullptr;
}

expected<std::vector<field_binding>> bind_reads(const std::vector<field_read>& declared,
                                                const chain_fields& fields) {
  std::vector<field_binding> out;
  for (const auto& r : declared) {
    auto index = fields.read(r.name);
    if (!index) {
      return std::move(index).error();
    }
    const auto& type = fields.type(*index);
    if ((r.type && *r.type != type.type) || (r.rank && *r.rank != type.rank)) {
      std::string wanted = r.type ? std::string(name_of(*r.type)) : std::string("any dtype");
      wanted += r.rank ? " of rank " + std::to_string(*r.rank) : std::string(" of any rank");
      return error(errc::invalid_config, "field '" + r.name + "' is " + describe(type) +
                                             " there (made by " + fields.made_by(*index) +
                                             "); the step reads " + wanted);
    }
    out.push_back({r.name, *index, type, fields.image(*index)});
  }
  return out;
}

expected<std::vector<field_binding>> bind_makes(const std::vector<field_made>& declared,
                                                const std::vector<field_binding>& reads,
                                                chain_fields& fields) {
  std::vector<field_binding> out;
  for (const auto& m : declared) {
    if (m.rank < 0 || m.rank > host_array::max_rank) {
      return error(errc::invalid_config, "field '" + m.name + "' is made of rank " +
                                             std::to_string(m.rank) + " (0 to " +
                                             std::to_string(host_array::max_rank) + ")");
    }
    field_type type{field_kind::tensor, m.type, m.rank, {}};
    for (int i = 0; i < m.rank; ++i) {
      type.shape[static_cast<std::size_t>(i)] = varies;
    }
    if (!m.same_shape_as.empty()) {
      const auto* like = find_binding(reads, m.same_shape_as);
      if (like == nullptr || like->type.rank != m.rank) {
        return error(errc::invalid_config,
                     "field '" + m.name + "' keeps the shape of '" + m.same_shape_as +
                         "', which the step does not read with rank " + std::to_string(m.rank));
      }
      type.shape = like->type.shape;
    }
    auto existing = fields.read(m.name);
    const bool image = existing && fields.image(*existing) && m.type == dtype::uint8 && m.rank == 3;
    std::size_t index = fields.write(m.name, type, image);
    out.push_back({m.name, index, type, image});
  }
  return out;
}

bool fits(const field_type& want, dtype type, const array_shape& shape) noexcept {
  if (want.type != type || want.rank != shape.rank) {
    return false;
  }
  for (int i = 0; i < shape.rank; ++i) {
    const auto fixed = want.shape[static_cast<std::size_t>(i)];
    if (fixed != varies && fixed != shape[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace conveyor
