#pragma once
/// The named parts of a record (core/storage/record.hpp): how a multipart record's payload
/// holds them, and how a caller finds the one it needs.
///
/// Part container (a multipart record's payload), all integers little-endian:
///
///   u32 part count
///   per part, in order:  u16 name length | name bytes | u64 size
///   the parts' bytes, in the same order, back to back, nothing after them
///
/// A part's name is 1..255 bytes of [A-Za-z0-9._-], unique within its record: the
/// extension(s) WebDataset names a member by (`jpg`, `cls`, `x.npy`, `seg.png`). Parsing checks
/// every length against the payload, so a container that lies is an error naming the record's
/// key and what is wrong, never a read out of bounds.
///
/// A single-part record (a v1 shard's record, an image folder's file) has one part, named by
/// its key's extension: lowercased, after the last '.' of the key's last path component
/// ("a/b.JPEG" -> "jpeg"), or "bin" when that component has no '.' or ends in one.
///
/// Everything here is a pure function: callable from any thread.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/record.hpp"

namespace conveyor {

inline constexpr std::size_t max_part_name_size = 255;

/// One part of a record: views into the record (its payload; a single part's name may view its
/// key), valid while the record lives and is not modified.
struct part_view {
  std::string_view name;
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
};

/// The parts of `r`: those of its container when r.multipart, else its payload as one part
/// named by single_part_name(r.key). Errors (corrupt_shard) name r.key and what in the
/// container is wrong.
expected<std::vector<part_view>> parts_of(const record& r);

/// The parts of the container in [data, data + size); `key` names the record in errors.
expected<std::vector<part_view>> parse_parts(const std::uint8_t* data, std::size_t size,
                                             std::string_view key);

/// The part among `parts` that `wanted` names, or nullptr. `wanted` lists alternatives
/// separated by ';' ("jpg;jpeg;png"), in order of preference: the first alternative that is
/// exactly (bytes, case included) the name of a part gives that part. Names are whole: "npy"
/// does not find "x.npy", "x.npy" finds only "x.npy". Empty alternatives are ignored.
const part_view* find_part(const std::vector<part_view>& parts, std::string_view wanted);

/// The container holding `parts` in this order. Precondition: every name passes
/// check_part_names (a container made from others does not parse: parts_of refuses it).
std::vector<std::uint8_t> encode_parts(
    const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& parts);

/// The bytes a container starts with (the count and the name/size table), for parts of these
/// names and sizes in this order; the parts' bytes follow it back to back. For writers that
/// place the parts' bytes themselves (the WebDataset reader reads members into place).
/// Precondition as for encode_parts.
std::vector<std::uint8_t> encode_part_table(
    const std::vector<std::pair<std::string_view, std::uint64_t>>& names_and_sizes);

/// Whether `name` may name a part: 1..255 bytes of [A-Za-z0-9._-].
bool is_part_name(std::string_view name) noexcept;

/// Every name is a part name and none is there twice; errors (invalid_argument) name `key`
/// and the name at fault.
expected<void> check_part_names(const std::vector<std::string_view>& names, std::string_view key);

/// The part name a file extension gives: the extension with A-Z lowercased (as WebDataset
/// names parts; other bytes as they are).
std::string part_name_of_extension(std::string_view extension);

/// The name of a single-part record's one part, from its key (see above).
std::string single_part_name(std::string_view key);
/// single_part_name(key) as a view that outlives the call (a constant, the key's own
/// extension, or a process-wide interned name): no allocation on the read path.
std::string_view single_part_view_name(std::string_view key);

/// A record's label by WebDataset's convention: the decimal integer a "cls" part holds
/// (ASCII whitespace around it allowed, an optional sign, within int32), or 0 when there is no
/// "cls" part or it holds anything else.
std::int32_t label_of_parts(const std::vector<part_view>& parts);

}  // namespace conveyor
