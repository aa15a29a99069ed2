#include "core/serving/feed_layout.hpp"

#include <algorithm>
#include <cstring>

#include "core/base/little_endian.hpp"

namespace conveyor {
namespace {

namespace le = little_endian;

constexpr std::size_t cache_line = 64;
constexpr std::size_t page = 4096;
constexpr char magic[8] = {'C', 'V', 'Y', 'R', 'F', 'E', 'E', 'D'};
constexpr std::size_t header_fixed = 8 + 4 + 4 + 8 + 8 + 4 + 4;
// kind, collate, dtype, rank, name length u16, then 4 x i64 extents (-1: varies)
constexpr std::size_t field_head = 6 + 4 * 8;

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

error bad(const std::string& what) {
  return {errc::invalid_argument, "the node's shared feed: " + what};
}

// The fixed head of every slot.
struct slot_header {
  std::uint32_t samples;
  std::uint32_t keys_used;  ///< bytes of the key area in use
  std::uint64_t published_ns;
};
static_assert(sizeof(slot_header) <= cache_line);

// Writes the keys, each cut to what is left of the room; returns the bytes used.
std::uint32_t put_keys(std::uint8_t* at, std::uint32_t room, const std::vector<std::string>& keys) {
  std::uint32_t used = 0;
  for (const auto& key : keys) {
    std::uint16_t n = 0;
    if (room - used >= sizeof n) {
      n = static_cast<std::uint16_t>(
          std::min<std::size_t>({key.size(), room - used - sizeof n, 0xFFFF}));
      std::memcpy(at + used, &n, sizeof n);
      std::memcpy(at + used + sizeof n, key.data(), n);
      used += static_cast<std::uint32_t>(sizeof n + n);
    }
  }
  return used;
}

// Reads `samples` keys from `used` bytes; a key past the end reads as "".
std::vector<std::string> take_keys(const std::uint8_t* at, std::uint32_t used,
                                   std::uint32_t samples) {
  std::vector<std::string> keys(samples);
  std::uint32_t pos = 0;
  for (auto& key : keys) {
    std::uint16_t n = 0;
    if (used - pos < sizeof n) {
      break;
    }
    std::memcpy(&n, at + pos, sizeof n);
    pos += sizeof n;
    n = static_cast<std::uint16_t>(std::min<std::uint32_t>(n, used - pos));
    key.assign(reinterpret_cast<const char*>(at + pos), n);
    pos += n;
  }
  return keys;
}

void put_field(std::uint8_t* at, const batch_field& f) {
  std::memset(at, 0, field_record_bytes);
  at[0] = static_cast<std::uint8_t>(f.type);
  at[1] = static_cast<std::uint8_t>(f.rank);
  at[2] = static_cast<std::uint8_t>(f.length_axes);
  for (std::size_t i = 0; i < f.shape.size(); ++i) {
    le::store(at + 8 + i * 8, f.shape[i]);
  }
  le::store(at + 48, static_cast<std::uint64_t>(f.values));
  le::store(at + 56, static_cast<std::uint64_t>(f.lengths));
  le::store(at + 64, static_cast<std::uint64_t>(f.offsets));
  le::store(at + 72, f.samples);
}

batch_field take_field(const std::uint8_t* at) {
  batch_field f;
  f.type = static_cast<dtype>(at[0]);
  f.rank = at[1];
  f.length_axes = at[2];
  for (std::size_t i = 0; i < f.shape.size(); ++i) {
    f.shape[i] = le::load<std::int64_t>(at + 8 + i * 8);
  }
  f.values = static_cast<std::size_t>(le::load<std::uint64_t>(at + 48));
  f.lengths = static_cast<std::size_t>(le::load<std::uint64_t>(at + 56));
  f.offsets = static_cast<std::size_t>(le::load<std::uint64_t>(at + 64));
  f.samples = le::load<std::uint32_t>(at + 72);
  return f;
}

// `size` bytes at `offset` lie inside a room of `room` bytes (no overflow).
bool inside(std::size_t offset, std::size_t size, std::size_t room) {
  return offset <= room && size <= room - offset;
}

// Why field `f` (schema entry `spec`) of a batch of `samples` samples cannot be trusted in a
// blob of `room` bytes at `blob`; empty when it can.
std::string check_field(const field_spec& spec, const batch_field& f, std::uint32_t samples,
                        const std::uint8_t* blob, std::size_t room) {
  const int rank = spec.collate.mode == collate_mode::ragged ? spec.type.rank : spec.type.rank + 1;
  if (f.type != spec.type.type || f.rank != rank || f.samples != samples) {
    return "its dtype, rank or sample count is not the feed's";
  }
  std::size_t elements = 1;
  for (int i = 0; i < f.rank; ++i) {
    const auto e = f.shape[static_cast<std::size_t>(i)];
    if (e < 0 || (e > 0 && elements > room / static_cast<std::size_t>(e))) {
      return "an extent out of range";
    }
    elements *= static_cast<std::size_t>(e);
  }
  if (!inside(f.values, elements * size_of(f.type), room)) {
    return "its values run past the slot";
  }
  const auto mode = spec.collate.mode;
  if (mode != collate_mode::ragged && f.shape[0] != samples) {
    return "its first extent is not the batch's samples";
  }
  if (mode == collate_mode::pad &&
      (f.length_axes > spec.type.rank ||
       !inside(f.lengths, std::size_t{samples} * static_cast<std::size_t>(f.length_axes) * 4,
               room))) {
    return "its lengths run past the slot";
  }
  if (mode == collate_mode::ragged) {
    if (!inside(f.offsets, (std::size_t{samples} + 1) * 8, room)) {
      return "its offsets run past the slot";
    }
    std::int64_t previous = 0;
    for (std::uint32_t i = 0; i <= samples; ++i) {
      const auto o = le::load<std::int64_t>(blob + f.offsets + i * 8);
      if (o < previous || (i == 0 && o != 0) || o > f.shape[0]) {
        return "its offsets do not ascend from 0 to its rows";
      }
      previous = o;
    }
    if (samples > 0 && previous != f.shape[0]) {
      return "its offsets do not end at its rows";
    }
  }
  return "";
}

}  // namespace

feed_layout feed_layout::make(std::uint64_t batch_size, std::uint32_t fields,
                              std::size_t blob_bytes, std::uint32_t key_bytes) {
  feed_layout l;
  l.batch_size = batch_size;
  l.key_bytes = key_bytes;
  l.fields = fields;
  l.header_bytes = round_up(header_fixed + fields * (field_head + max_field_name), page);
  l.table_offset = cache_line;
  l.ids_offset = round_up(l.table_offset + fields * field_record_bytes, cache_line);
  l.keys_offset = round_up(l.ids_offset + batch_size * sizeof(std::uint64_t), cache_line);
  l.blob_offset = round_up(l.keys_offset + key_bytes, page);
  l.blob_bytes = blob_bytes;
  l.slot_bytes = round_up(l.blob_offset + blob_bytes, page);
  return l;
}

expected<std::vector<std::uint8_t>> encode_feed_header(const feed_layout& layout,
                                                       std::uint32_t slots,
                                                       const sample_schema& schema) {
  if (schema.fields.size() > max_feed_fields) {
    return error{errc::invalid_config, "a served feed carries at most " +
                                           std::to_string(max_feed_fields) + " fields, not " +
                                           std::to_string(schema.fields.size())};
  }
  std::vector<std::uint8_t> out(std::max(layout.header_bytes, header_fixed), 0);
  std::uint8_t* head = out.data();
  if (head == nullptr) {
    return error{errc::invalid_config, "an empty feed header"};
  }
  std::memcpy(head, magic, sizeof magic);
  le::store(head + 8, feed_layout_version);
  le::store(head + 12, slots);
  le::store(head + 16, static_cast<std::uint64_t>(layout.slot_bytes));
  le::store(head + 24, layout.batch_size);
  le::store(head + 32, layout.key_bytes);
  le::store(head + 36, static_cast<std::uint32_t>(schema.fields.size()));
  std::size_t at = header_fixed;
  for (const auto& f : schema.fields) {
    if (f.name.empty() || f.name.size() > max_field_name) {
      return error{errc::invalid_config, "field '" + f.name + "': a served field's name is 1 to " +
                                             std::to_string(max_field_name) + " bytes"};
    }
    out[at] = static_cast<std::uint8_t>(f.type.kind);
    out[at + 1] = static_cast<std::uint8_t>(f.collate.mode);
    out[at + 2] = static_cast<std::uint8_t>(f.type.type);
    out[at + 3] = static_cast<std::uint8_t>(f.type.rank);
    le::store(out.data() + at + 4, static_cast<std::uint16_t>(f.name.size()));
    for (std::size_t i = 0; i < f.type.shape.size(); ++i) {
      le::store(out.data() + at + 6 + i * 8, f.type.shape[i]);
    }
    std::memcpy(out.data() + at + field_head, f.name.data(), f.name.size());
    at += field_head + f.name.size();
  }
  return out;
}

expected<feed_description> decode_feed_header(const std::uint8_t* region,
                                              std::size_t region_bytes) {
  if (region_bytes < header_fixed || std::memcmp(region, magic, sizeof magic) != 0) {
    return bad("no feed header (magic)");
  }
  if (le::load<std::uint32_t>(region + 8) != feed_layout_version) {
    return bad("layout version " + std::to_string(le::load<std::uint32_t>(region + 8)) +
               ", this client reads " + std::to_string(feed_layout_version) +
               " (node and client must come from the same release)");
  }
  feed_description d;
  d.slots = le::load<std::uint32_t>(region + 12);
  const auto slot_bytes = le::load<std::uint64_t>(region + 16);
  const auto batch_size = le::load<std::uint64_t>(region + 24);
  const auto key_bytes = le::load<std::uint32_t>(region + 32);
  const auto fields = le::load<std::uint32_t>(region + 36);
  if (fields == 0 || fields > max_feed_fields || batch_size == 0 || batch_size > (1U << 24)) {
    return bad("its field count or batch size is out of range");
  }
  std::size_t at = header_fixed;
  for (std::uint32_t i = 0; i < fields; ++i) {
    if (!inside(at, field_head, region_bytes)) {
      return bad("its field table runs past the region");
    }
    const auto name_size = le::load<std::uint16_t>(region + at + 4);
    auto type = dtype_of_value(region[at + 2]);
    if (name_size == 0 || name_size > max_field_name || !type || region[at] > 1 ||
        region[at + 1] > 2 || region[at + 3] > host_array::max_rank ||
        !inside(at + field_head, name_size, region_bytes)) {
      return bad("field " + std::to_string(i) + " is not a field");
    }
    field_spec f;
    f.name.assign(reinterpret_cast<const char*>(region + at + field_head), name_size);
    f.type.kind = static_cast<field_kind>(region[at]);
    f.collate.mode = static_cast<collate_mode>(region[at + 1]);
    f.type.type = *type;
    f.type.rank = region[at + 3];
    for (std::size_t e = 0; e < f.type.shape.size(); ++e) {
      f.type.shape[e] =
          std::max<std::int64_t>(le::load<std::int64_t>(region + at + 6 + e * 8), varies);
    }
    d.schema.fields.push_back(std::move(f));
    at += field_head + name_size;
  }
  // The blob's room is what the slot leaves after the rest.
  d.layout = feed_layout::make(batch_size, fields, 0, key_bytes);
  if (slot_bytes < d.layout.blob_offset || slot_bytes % page != 0) {
    return bad("its slots are too small for their headers");
  }
  d.layout.blob_bytes = static_cast<std::size_t>(slot_bytes) - d.layout.blob_offset;
  d.layout.slot_bytes = static_cast<std::size_t>(slot_bytes);
  if (d.slots == 0 || d.layout.region_bytes(d.slots) > region_bytes ||
      d.layout.slot_bytes > region_bytes) {
    return bad("its " + std::to_string(d.slots) + " slots of " + std::to_string(slot_bytes) +
               " bytes do not fit the region of " + std::to_string(region_bytes));
  }
  return d;
}

void write_slot(const feed_layout& layout, std::uint8_t* slot, const slot_contents& contents) {
  slot_header h{};
  h.samples = static_cast<std::uint32_t>(contents.sample_ids.size());
  h.published_ns = contents.published_ns;
  for (std::size_t i = 0; i < contents.fields.size(); ++i) {
    put_field(slot + layout.table_offset + i * field_record_bytes, contents.fields[i]);
  }
  if (!contents.sample_ids.empty()) {
    std::memcpy(slot + layout.ids_offset, contents.sample_ids.data(),
                contents.sample_ids.size() * sizeof(std::uint64_t));
  }
  h.keys_used = put_keys(slot + layout.keys_offset, layout.key_bytes, contents.keys);
  std::memcpy(slot, &h, sizeof h);
}

expected<slot_contents> read_slot(const feed_layout& layout, const sample_schema& schema,
                                  const std::uint8_t* slot, std::uint32_t samples) {
  slot_header h{};
  std::memcpy(&h, slot, sizeof h);
  if (h.samples != samples || samples > layout.batch_size || h.keys_used > layout.key_bytes ||
      schema.fields.size() != layout.fields) {
    return bad("a slot's header says " + std::to_string(h.samples) + " samples and " +
               std::to_string(h.keys_used) + " key bytes, the node's message " +
               std::to_string(samples) + " samples (batch size " +
               std::to_string(layout.batch_size) + ", key room " +
               std::to_string(layout.key_bytes) + ")");
  }
  slot_contents out;
  const auto* blob = slot + layout.blob_offset;
  for (std::size_t i = 0; i < schema.fields.size(); ++i) {
    auto f = take_field(slot + layout.table_offset + i * field_record_bytes);
    auto why = check_field(schema.fields[i], f, samples, blob, layout.blob_bytes);
    if (!why.empty()) {
      return bad("field '" + schema.fields[i].name + "' of a slot: " + why);
    }
    out.fields.push_back(f);
  }
  out.sample_ids.resize(samples);
  if (samples > 0) {
    std::memcpy(out.sample_ids.data(), slot + layout.ids_offset, samples * sizeof(std::uint64_t));
  }
  out.keys = take_keys(slot + layout.keys_offset, h.keys_used, samples);
  out.published_ns = h.published_ns;
  return out;
}

std::uint32_t default_key_bytes(std::uint64_t batch_size) {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(batch_size * 256, 1U << 24));
}

}  // namespace conveyor
