#include "core/delivery/batch_blob.hpp"

#include <algorithm>
#include <cstring>

#include "core/base/element_fill.hpp"
#include "core/delivery/normalized_plane_writer.hpp"

namespace conveyor {
namespace {

constexpr std::size_t cache_line = 64;

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

std::int64_t round_up_extent(std::int64_t n, std::int64_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

error unfit(const field_spec& f, const std::string& why) {
  return error{errc::invalid_config, "field '" + f.name + "' (" + describe(f.type) + ", collate " +
                                         std::string(to_string(f.collate.mode)) + "): " + why};
}

// Per-sample extents of `f`'s room: its fixed shape, with pad's varying axes at max_shape
// rounded up to the multiple.
expected<host_array::shape_type> room_shape(const field_spec& f, std::vector<int>& padded) {
  auto shape = f.type.shape;
  for (int i = 0; i < f.type.rank; ++i) {
    auto& e = shape[static_cast<std::size_t>(i)];
    const auto max = f.collate.max_shape[static_cast<std::size_t>(i)];
    switch (f.collate.mode) {
      case collate_mode::stack:
        if (e == varies) {
          return unfit(f, "axis " + std::to_string(i) +
                              " varies from sample to sample: collate it with pad (and a "
                              "max_shape) or ragged");
        }
        break;
      case collate_mode::pad:
        if (e == varies) {
          if (max <= 0) {
            return unfit(f, "axis " + std::to_string(i) +
                                " varies: pad needs its largest extent in max_shape");
          }
          padded.push_back(i);
          e = round_up_extent(max, f.collate.multiple);
        }
        break;
      case collate_mode::ragged:
        if (i > 0 && e == varies) {
          return unfit(f, "axis " + std::to_string(i) +
                              " varies: a ragged field may vary in its first axis only");
        }
        break;
    }
  }
  return shape;
}

std::size_t elements_of(int rank, const host_array::shape_type& shape, int from = 0) {
  std::size_t n = 1;
  for (int i = from; i < rank; ++i) {
    n *= static_cast<std::size_t>(shape[static_cast<std::size_t>(i)]);
  }
  return n;
}

// A field's room at most: past it a topology's bounds (max_values, max_shape, batch_size) are
// a mistake, not a batch; it keeps every sum and product below from wrapping.
constexpr std::size_t max_room = std::size_t{1} << 40;

// n * by, or nullopt past max_room.
std::optional<std::size_t> times(std::optional<std::size_t> n, std::uint64_t by) {
  std::size_t out = 0;
  if (!n || __builtin_mul_overflow(*n, by, &out) || out > max_room) {
    return std::nullopt;
  }
  return out;
}

// `count` items of `item` bytes times each extent of `shape` from axis `from` to `rank`, or
// nullopt past max_room.
std::optional<std::size_t> room_bytes(std::uint64_t count, std::size_t item, int rank,
                                      const host_array::shape_type& shape, int from) {
  auto n = times(item, count);
  for (int i = from; i < rank; ++i) {
    n = times(n, static_cast<std::uint64_t>(shape[static_cast<std::size_t>(i)]));
  }
  return n;
}

// Lays out field `f`, its region from `at` on; the end of what it takes.
expected<std::size_t> lay_out(const field_spec& f, std::uint64_t batch_size, std::size_t at,
                              field_region& out) {
  const auto& c = f.collate;
  if (c.mode == collate_mode::ragged && (f.type.rank == 0 || c.max_values <= 0)) {
    return unfit(f, f.type.rank == 0 ? "a scalar cannot be ragged"
                                     : "ragged needs max_values (rows per sample at most)");
  }
  auto shape = room_shape(f, out.padded_axes);
  if (!shape) {
    return std::move(shape).error();
  }
  const auto item = size_of(f.type.type);
  const auto room = c.mode == collate_mode::ragged
                        ? times(room_bytes(batch_size, item, f.type.rank, *shape, 1),
                                static_cast<std::uint64_t>(c.max_values))
                        : room_bytes(batch_size, item, f.type.rank, *shape, 0);
  if (!room) {
    return unfit(f, "room for " + std::to_string(batch_size) +
                        " samples at their largest is past 1 TiB (max_values, max_shape)");
  }
  out.values = round_up(at, cache_line);
  out.value_bytes = *room;
  auto end = out.values + out.value_bytes;
  if (c.mode == collate_mode::pad) {
    out.lengths = round_up(end, cache_line);
    end = out.lengths + batch_size * out.padded_axes.size() * sizeof(std::int32_t);
  }
  if (c.mode == collate_mode::ragged) {
    out.offsets = round_up(end, cache_line);
    end = out.offsets + (batch_size + 1) * sizeof(std::int64_t);
  }
  return end;
}

// --- collate -------------------------------------------------------------------------------

void write_stack(const batch_plan& plan, std::size_t index, std::uint8_t* dest) {
  for (const auto& s : plan.samples) {
    const auto& bytes = s->fields[index].bytes;
    std::memcpy(dest, bytes.data(), bytes.size());
    dest += bytes.size();
  }
}

void write_normalized(const batch_plan& plan, const collate_normalize& n, std::uint8_t* dest) {
  auto* out = reinterpret_cast<float*>(dest);
  for (const auto& s : plan.samples) {
    const auto& a = s->fields[n.field];
    const int channels = static_cast<int>(a.extent(0));
    const std::size_t plane = a.element_count() / static_cast<std::size_t>(channels);
    for (int c = 0; c < channels; ++c) {
      write_normalized_plane(n.table, c, a.bytes.data() + c * plane, plane, out);
      out += plane;
    }
  }
  store_fence();
}

// Writes each row (the last axis) of `a` into the box at `dest` whose extents are `box` (each
// >= a's) and whose elements are `out_item` bytes: write(row, elements, index on the first
// axis, where it goes).
template <class WriteRow>
void rows_into_box(const host_array& a, const host_array::shape_type& box, std::size_t out_item,
                   std::uint8_t* dest, WriteRow write) {
  const auto item = size_of(a.type);
  if (a.rank == 0) {
    write(a.bytes.data(), 1, 0, dest);
    return;
  }
  const int last = a.rank - 1;
  const auto row = static_cast<std::size_t>(a.extent(last));
  const std::size_t rows = a.element_count() / std::max<std::size_t>(row, 1);
  std::array<std::int64_t, host_array::max_rank> at{};
  for (std::size_t r = 0; r < rows && row > 0; ++r) {
    std::size_t offset = 0;  // of row `at` in the box, in elements
    for (int d = 0; d < last; ++d) {
      offset = offset * static_cast<std::size_t>(box[static_cast<std::size_t>(d)]) +
               static_cast<std::size_t>(at[static_cast<std::size_t>(d)]);
    }
    offset *= static_cast<std::size_t>(box[static_cast<std::size_t>(last)]);
    write(a.bytes.data() + r * row * item, row, last == 0 ? 0 : at[0], dest + offset * out_item);
    for (int d = last - 1; d >= 0; --d) {  // the next row's index
      if (++at[static_cast<std::size_t>(d)] < a.extent(d)) {
        break;
      }
      at[static_cast<std::size_t>(d)] = 0;
    }
  }
}

// Copies `a` into the box (of a's dtype), or with `normalize` writes its uint8 rows as
// normalised floats (channel = index on the first axis).
void write_into_box(const host_array& a, const host_array::shape_type& box, std::uint8_t* dest,
                    const collate_normalize* normalize) {
  if (normalize != nullptr) {
    rows_into_box(a, box, sizeof(float), dest,
                  [&](const std::uint8_t* row, std::size_t n, std::int64_t c, std::uint8_t* out) {
                    write_normalized_plane(normalize->table, static_cast<int>(c), row, n,
                                           reinterpret_cast<float*>(out));
                  });
    return;
  }
  const auto item = size_of(a.type);
  rows_into_box(a, box, item, dest,
                [item](const std::uint8_t* row, std::size_t n, std::int64_t, std::uint8_t* out) {
                  std::memcpy(out, row, n * item);
                });
}

// `normalize`: the field is the uint8 image that the feeder normalises into float32 (f's type).
batch_field write_pad(const batch_plan& plan, std::size_t index, const field_spec& f,
                      const field_region& region, std::uint8_t* buffer,
                      const collate_normalize* normalize) {
  batch_field out;
  auto box = f.type.shape;
  for (int axis : region.padded_axes) {
    std::int64_t longest = 0;
    for (const auto& s : plan.samples) {
      longest = std::max(longest, s->fields[index].extent(axis));
    }
    box[static_cast<std::size_t>(axis)] = round_up_extent(longest, f.collate.multiple);
  }
  const auto item = size_of(f.type.type);
  const std::size_t sample_bytes = elements_of(f.type.rank, box) * item;
  std::uint8_t* values = buffer + region.values;
  fill_elements(values, plan.samples.size() * sample_bytes / item, f.type.type, f.collate.value);
  auto* lengths = reinterpret_cast<std::int32_t*>(buffer + region.lengths);
  for (std::size_t i = 0; i < plan.samples.size(); ++i) {
    const auto& a = plan.samples[i]->fields[index];
    write_into_box(a, box, values + i * sample_bytes, normalize);
    for (int axis : region.padded_axes) {
      *lengths++ = static_cast<std::int32_t>(a.extent(axis));
    }
  }
  if (normalize != nullptr) {
    store_fence();
  }
  out.lengths = region.lengths;
  out.length_axes = static_cast<int>(region.padded_axes.size());
  std::copy(box.begin(), box.begin() + f.type.rank, out.shape.begin() + 1);
  return out;
}

batch_field write_ragged(const batch_plan& plan, std::size_t index, const field_spec& f,
                         const field_region& region, std::uint8_t* buffer) {
  batch_field out;
  auto* offsets = reinterpret_cast<std::int64_t*>(buffer + region.offsets);
  std::uint8_t* dest = buffer + region.values;
  std::int64_t rows = 0;
  offsets[0] = 0;
  for (std::size_t i = 0; i < plan.samples.size(); ++i) {
    const auto& a = plan.samples[i]->fields[index];
    if (!a.bytes.empty()) {  // an empty vector's data() may be null
      std::memcpy(dest, a.bytes.data(), a.bytes.size());
    }
    dest += a.bytes.size();
    rows += a.extent(0);
    offsets[i + 1] = rows;
  }
  out.offsets = region.offsets;
  std::copy(f.type.shape.begin() + 1, f.type.shape.begin() + f.type.rank, out.shape.begin() + 1);
  out.shape[0] = rows;
  return out;
}

batch_field write_field(const batch_plan& plan, std::size_t index, const field_spec& f,
                        const field_region& region, std::uint8_t* buffer,
                        const collate_normalize* normalize) {
  batch_field out;
  const auto* normalized = normalize != nullptr && normalize->field == index ? normalize : nullptr;
  switch (f.collate.mode) {
    case collate_mode::stack:
      if (normalized != nullptr) {
        write_normalized(plan, *normalized, buffer + region.values);
      } else {
        write_stack(plan, index, buffer + region.values);
      }
      std::copy(f.type.shape.begin(), f.type.shape.begin() + f.type.rank, out.shape.begin() + 1);
      break;
    case collate_mode::pad:
      out = write_pad(plan, index, f, region, buffer, normalized);
      break;
    case collate_mode::ragged:
      out = write_ragged(plan, index, f, region, buffer);
      break;
  }
  out.type = f.type.type;
  out.rank = f.collate.mode == collate_mode::ragged ? f.type.rank : f.type.rank + 1;
  out.values = region.values;
  out.samples = static_cast<std::uint32_t>(plan.samples.size());
  if (f.collate.mode != collate_mode::ragged) {
    out.shape[0] = static_cast<std::int64_t>(plan.samples.size());
  }
  return out;
}

}  // namespace

expected<blob_layout> blob_layout::make(const sample_schema& schema, std::uint64_t batch_size) {
  blob_layout out;
  out.batch_size = batch_size;
  std::size_t at = 0;
  for (const auto& f : schema.fields) {
    field_region region;
    auto end = lay_out(f, batch_size, at, region);
    if (!end) {
      return std::move(end).error();
    }
    at = *end;
    if (at > max_room) {
      return error{errc::invalid_config,
                   "the batch's fields together take more than 1 TiB, at field '" + f.name + "'"};
    }
    out.fields.push_back(std::move(region));
  }
  out.bytes = round_up(std::max<std::size_t>(at, 1), cache_line);
  return out;
}

std::size_t batch_field::elements() const noexcept {
  std::size_t n = 1;
  for (int i = 0; i < rank; ++i) {
    n *= static_cast<std::size_t>(shape[static_cast<std::size_t>(i)]);
  }
  return n;
}

std::vector<batch_field> collate_batch(const batch_plan& plan, const sample_schema& schema,
                                       const blob_layout& layout, std::uint8_t* buffer,
                                       const collate_normalize* normalize) {
  std::vector<batch_field> out;
  out.reserve(schema.fields.size());
  for (std::size_t i = 0; i < schema.fields.size(); ++i) {
    if (plan.samples.empty()) {
      const auto& f = schema.fields[i];
      batch_field empty;
      empty.type = f.type.type;
      empty.rank = f.collate.mode == collate_mode::ragged ? f.type.rank : f.type.rank + 1;
      out.push_back(empty);
      continue;
    }
    out.push_back(write_field(plan, i, schema.fields[i], layout.fields[i], buffer, normalize));
  }
  return out;
}

}  // namespace conveyor
