#pragma once
/// The record shard format, versions 1 and 2. All integers little-endian.
///
///   file header (32 B)  magic "CNVYSHRD" | u32 version | u32 flags (0) | u64 reserved (0)
///                       | u64 XXH3-64 of the 24 bytes before it
///   records             each: record header (32 B) | key bytes | payload bytes
///     record header     magic "REC1" | u32 key_len | i32 label | u32 record flags
///                       | u64 payload_len | u64 XXH3-64 of (header bytes 0..24, key, payload)
///   index               record_count entries of 16 B: u64 offset | u64 size (header+key+payload)
///   trailer (40 B)      u64 index_offset | u64 record_count | u64 XXH3-64 of the index
///                       | u64 XXH3-64 of the 24 trailer bytes before it | magic "CNVYEND1"
///
/// Versions. Version 1 (the first shards written) has no record flags: the field is reserved,
/// written 0 and not read; every record is one part (record.hpp). Version 2 adds the record
/// flags (bit 0, `record_multipart`: the payload is a part container, record_parts.hpp; other
/// bits must be 0); nothing else differs. The record checksum covers the flags, as it covers
/// the whole header before it. The writer writes version 1 when no record of the shard is
/// multipart (so such shards stay readable by builds that know only version 1), version 2
/// otherwise; the reader reads both.
///
/// The trailer is written last, so a truncated or torn file has no valid trailer and is
/// rejected on open; the index gives O(1) random access; every record carries its own
/// checksum, so a flipped byte is found and named by shard and record index.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "conveyor/error.hpp"

namespace conveyor::shard_format {

/// The versions this build reads; it writes the lowest that holds the shard's records.
inline constexpr std::uint32_t first_version = 1;
inline constexpr std::uint32_t multipart_version = 2;
/// Record flags (version 2).
inline constexpr std::uint32_t record_multipart = 1u << 0;
inline constexpr std::uint32_t known_record_flags = record_multipart;
inline constexpr std::size_t file_header_size = 32;
inline constexpr std::size_t record_header_size = 32;
inline constexpr std::size_t index_entry_size = 16;
inline constexpr std::size_t trailer_size = 40;
inline constexpr std::array<char, 8> file_magic{'C', 'N', 'V', 'Y', 'S', 'H', 'R', 'D'};
inline constexpr std::array<char, 4> record_magic{'R', 'E', 'C', '1'};
inline constexpr std::array<char, 8> trailer_magic{'C', 'N', 'V', 'Y', 'E', 'N', 'D', '1'};
/// Keys longer than this are refused by the writer and flagged as corrupt by the reader.
inline constexpr std::uint32_t max_key_size = 4096;

struct record_header {
  std::uint32_t key_size = 0;
  std::int32_t label = 0;
  std::uint32_t flags = 0;  ///< record flags; always 0 in a version 1 shard
  std::uint64_t payload_size = 0;
  std::uint64_t checksum = 0;
  std::uint64_t total_size() const { return record_header_size + key_size + payload_size; }
};

struct index_entry {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

struct trailer {
  std::uint64_t index_offset = 0;
  std::uint64_t record_count = 0;
  std::uint64_t index_checksum = 0;
};

using file_header_bytes = std::array<std::uint8_t, file_header_size>;
using record_header_bytes = std::array<std::uint8_t, record_header_size>;
using trailer_bytes = std::array<std::uint8_t, trailer_size>;

file_header_bytes encode_file_header(std::uint32_t version);
/// The shard's version (first_version or multipart_version). `where` names the shard in the
/// error.
expected<std::uint32_t> decode_file_header(const std::uint8_t* bytes, const std::string& where);

/// Encodes a record header whose checksum covers the header fields, key and payload. `flags`
/// is 0 for a version 1 shard.
record_header_bytes encode_record_header(std::uint32_t key_size, std::int32_t label,
                                         std::uint32_t flags, const std::uint8_t* key,
                                         const std::uint8_t* payload, std::uint64_t payload_size);
/// Checks magic and field sanity (not the checksum) of a record header of a shard of
/// `version`: a version 1 header's flags read as 0; a version 2 header with unknown flags is
/// corrupt. `where` names shard and record.
expected<record_header> decode_record_header(const std::uint8_t* bytes, std::uint32_t version,
                                             const std::string& where);
/// XXH3-64 over header bytes 0..24, key and payload, as stored in the header.
std::uint64_t record_checksum(const std::uint8_t* header, const std::uint8_t* key,
                              std::uint32_t key_size, const std::uint8_t* payload,
                              std::uint64_t payload_size);

void encode_index_entry(const index_entry& entry, std::uint8_t* out);
index_entry decode_index_entry(const std::uint8_t* bytes);

trailer_bytes encode_trailer(const trailer& t);
expected<trailer> decode_trailer(const std::uint8_t* bytes, const std::string& where);

std::uint64_t checksum(const std::uint8_t* data, std::size_t size);

}  // namespace conveyor::shard_format
