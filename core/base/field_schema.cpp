#include "core/base/field_schema.hpp"

namespace conveyor {
namespace {

std::string extent_text(std::int64_t e) {
  return e == varies ? "?" : std::to_string(e);
}

std::string shape_text(int rank, const host_array::shape_type& shape) {
  std::string out = "[";
  for (int i = 0; i < rank; ++i) {
    out += (i == 0 ? "" : ", ") + extent_text(shape[static_cast<std::size_t>(i)]);
  }
  return out + "]";
}

}  // namespace

bool field_type::fixed() const noexcept {
  for (int i = 0; i < rank; ++i) {
    if (shape[static_cast<std::size_t>(i)] == varies) {
      return false;
    }
  }
  return true;
}

bool field_type::admits(const host_array& a) const noexcept {
  if (a.type != type || a.rank != rank) {
    return false;
  }
  for (int i = 0; i < rank; ++i) {
    const auto want = shape[static_cast<std::size_t>(i)];
    if (want != varies && want != a.extent(i)) {
      return false;
    }
  }
  return true;
}

bool field_type::operator==(const field_type& o) const noexcept {
  return kind == o.kind && type == o.type && rank == o.rank && shape == o.shape;
}

std::string describe(const field_type& t) {
  return std::string(t.kind == field_kind::bytes ? "bytes" : name_of(t.type)) + " " +
         shape_text(t.rank, t.shape);
}

field_type type_of(const host_array& a, field_kind kind) noexcept {
  return {kind, a.type, a.rank, a.shape};
}

std::string_view to_string(collate_mode mode) noexcept {
  switch (mode) {
    case collate_mode::stack:
      return "stack";
    case collate_mode::pad:
      return "pad";
    case collate_mode::ragged:
      return "ragged";
  }
  return "unknown";
}

std::optional<std::size_t> sample_schema::index_of(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == name) {
      return i;
    }
  }
  return std::nullopt;
}

const field_spec* sample_schema::find(std::string_view name) const noexcept {
  auto i = index_of(name);
  return i ? &fields[*i] : nullptr;
}

std::optional<std::string> unfit_for_batch(const field_spec& f, const host_array& a) {
  const auto what = [&] { return "field '" + f.name + "' came out " + describe(a); };
  if (a.type != f.type.type || a.rank != f.type.rank) {
    return what() + ", the chain makes it " + describe(f.type);
  }
  const auto& c = f.collate;
  for (int i = 0; i < a.rank; ++i) {
    const auto axis = static_cast<std::size_t>(i);
    const auto got = a.extent(i);
    switch (c.mode) {
      case collate_mode::stack:
        if (got != f.type.shape[axis]) {
          return what() + ", but it is stacked as " + describe(f.type) +
                 " (collate it with pad or ragged if samples differ)";
        }
        break;
      case collate_mode::pad:
        if (got > c.max_shape[axis]) {
          return what() + ", past the max_shape " + shape_text(a.rank, c.max_shape) +
                 " its batches are padded up to";
        }
        break;
      case collate_mode::ragged:
        if (i == 0 && got > c.max_values) {
          return what() + ", more rows than the max_values " + std::to_string(c.max_values) +
                 " a sample of this ragged field may have";
        }
        if (i > 0 && got != f.type.shape[axis]) {
          return what() + ", but its rows are " + describe(f.type) +
                 " (ragged fields vary in "
                 "their first axis only)";
        }
        break;
    }
  }
  return std::nullopt;
}

}  // namespace conveyor
