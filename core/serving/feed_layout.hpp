#pragma once
/// How a served feed lies in its shared region (one region per rank), so that a client reads
/// every batch without knowing the recipe: the region starts with a header that describes the
/// fields (names, kinds, dtypes, collates), and each slot with a table that says where each
/// field of its batch lies and in what shape. Host byte order (one machine).
///
///   region header (header_bytes, whole pages)
///       "CVYRFEED", version u32, slots u32, slot_bytes u64, batch_size u64, key_bytes u32,
///       field count u32, then per field: kind u8, collate u8, dtype u8, rank u8, name length
///       u16, 4 x i64 extents per sample (-1: it varies), and the name (1 to max_field_name
///       bytes)
///   slot i at header_bytes + i * slot_bytes (slot_bytes whole pages):
///     0             slot header: samples u32, keys_used u32, published_ns u64
///     table_offset  per field (field_record_bytes each): dtype u8, rank u8, length_axes u8,
///                   5 reserved, shape 5 x i64, values u64, lengths u64, offsets u64, samples
///                   u32, 4 reserved
///     ids_offset    uint64 per sample
///     keys_offset   per sample: uint16 length, then that many bytes; key_bytes in all
///     blob_offset   the batch's fields (core/delivery/batch_blob.hpp), blob_bytes of room: the
///                   feeder collates straight here
///
/// Readers check every number against the region and the layout before they trust it: a
/// damaged or hostile header is an error, never a read outside the region.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/field_schema.hpp"
#include "core/delivery/batch_blob.hpp"

namespace conveyor {

inline constexpr std::uint32_t feed_layout_version = 1;
/// A field's name in a feed is at most this long.
inline constexpr std::size_t max_field_name = 64;
/// A feed carries at most this many fields.
inline constexpr std::size_t max_feed_fields = 64;
inline constexpr std::size_t field_record_bytes = 80;

/// Plain value; pure functions.
struct feed_layout {
  std::uint64_t batch_size = 0;
  std::uint32_t key_bytes = 0;
  std::uint32_t fields = 0;
  std::size_t header_bytes = 0;  ///< the region header, whole pages
  std::size_t table_offset = 0;
  std::size_t ids_offset = 0;
  std::size_t keys_offset = 0;
  std::size_t blob_offset = 0;  ///< page-aligned
  std::size_t blob_bytes = 0;
  std::size_t slot_bytes = 0;  ///< whole pages

  /// The layout for `fields` fields whose buffer takes `blob_bytes`, in batches of up to
  /// `batch_size` samples with `key_bytes` of room for their keys.
  static feed_layout make(std::uint64_t batch_size, std::uint32_t fields, std::size_t blob_bytes,
                          std::uint32_t key_bytes);
  /// The region's size for `slots` slots; SIZE_MAX where it would wrap (a header that says
  /// so is refused: no region is that large).
  std::size_t region_bytes(std::uint32_t slots) const noexcept {
    std::size_t n = 0;
    if (__builtin_mul_overflow(static_cast<std::size_t>(slots), slot_bytes, &n) ||
        __builtin_add_overflow(n, header_bytes, &n)) {
      return SIZE_MAX;
    }
    return n;
  }
};

/// The key room the node gives each slot: 256 bytes a sample.
std::uint32_t default_key_bytes(std::uint64_t batch_size);

/// Node side: the region header of `slots` slots of `layout`, describing `schema` (names of 1
/// to max_field_name bytes, at most max_feed_fields fields: errc::invalid_config otherwise).
expected<std::vector<std::uint8_t>> encode_feed_header(const feed_layout& layout,
                                                       std::uint32_t slots,
                                                       const sample_schema& schema);

/// Client side: what a region's header says.
struct feed_description {
  feed_layout layout;
  std::uint32_t slots = 0;
  /// Names, kinds, dtypes, ranks, extents and collate modes (not the collates' parameters).
  sample_schema schema;
};

/// Reads the header of a region of `region_bytes` (errc::invalid_argument naming what does
/// not add up: magic, version, counts, names, a layout larger than the region).
expected<feed_description> decode_feed_header(const std::uint8_t* region, std::size_t region_bytes);

/// What a slot holds besides its fields' values.
struct slot_contents {
  std::vector<batch_field> fields;  ///< by schema index, offsets within the blob
  std::vector<std::uint64_t> sample_ids;
  std::vector<std::string> keys;
  std::uint64_t published_ns = 0;  ///< when the node handed the batch out (CLOCK_MONOTONIC)
};

/// Node side: writes the header, field table, ids and keys of a batch of sample_ids.size()
/// samples (<= batch_size; keys of the same length) into `slot`. The fields' values are the
/// feeder's.
void write_slot(const feed_layout& layout, std::uint8_t* slot, const slot_contents& contents);

/// Client side: reads them back for a batch the node said has `samples` samples, each field
/// checked against `schema` (its dtype and rank) and the blob's room (values, lengths and
/// offsets inside it; ragged offsets ascending from 0 to the rows). Never reads outside the
/// slot: errc::invalid_argument naming what disagrees otherwise.
expected<slot_contents> read_slot(const feed_layout& layout, const sample_schema& schema,
                                  const std::uint8_t* slot, std::uint32_t samples);

}  // namespace conveyor
