#pragma once
/// The restart index of a JPEG that conveyor-pack --restart rewrote (jpeg_restart.hpp): a
/// restart marker after every MCU row, and an APP9 segment that gives the byte offset of each
/// row's entropy data, so that a decoder starts Huffman decoding at a crop's first MCU row
/// instead of the image's first. The segment is ignored by every other decoder: the record
/// stays a plain JPEG.
///
/// The segment, before SOS: FF E9, its length (big-endian, as every JPEG segment), then
///   "CONVEYOR-RST\0", version (1 byte, 1), rows (uint32 LE), rows x offset (uint32 LE),
/// where offset[i] is where row i's entropy data begins, counted from the first byte after the
/// SOS segment (offset[0] = 0; offset[i], i >= 1, is just after the RST marker that ends row
/// i - 1). Pure bytes, no libjpeg: found and checked in a walk over the header's segments.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace conveyor {

/// What a decoder needs to start at MCU row `k`: a header whose frame height is patched (at
/// `height_at`, 2 bytes big-endian) and the entropy data from entropy_begin + offset(k).
struct restart_index {
  std::size_t entropy_begin = 0;  ///< the first byte after the SOS segment
  std::size_t height_at = 0;      ///< where the frame header (SOF0/SOF1) holds the height
  int image_height = 0;
  int mcu_height = 0;  ///< pixels per MCU row: 8 x the largest vertical sampling factor
  const std::uint8_t* offsets = nullptr;  ///< rows x uint32 LE, inside the JPEG's bytes
  std::uint32_t rows = 0;

  std::uint32_t offset(std::uint32_t row) const noexcept;
};

/// The index of `data`, when it has a valid one: a sequential Huffman JPEG (SOF0 or SOF1) in
/// one scan of every component, a restart interval of exactly one MCU row (DRI), an index
/// segment whose row count matches the frame, offsets increasing and inside the data. nullopt
/// for anything else (no index, progressive, damaged): the caller decodes from the top.
/// Cheap: reads the header's segments, not the entropy data.
std::optional<restart_index> find_restart_index(const std::uint8_t* data, std::size_t size);

/// Whether the entropy data of row `k` (k >= 1) follows a restart marker, as the index says:
/// the two bytes before it are FF D0 + (k - 1) mod 8. Checked before a decoder trusts it.
bool restart_marker_before(const std::uint8_t* data, std::size_t size, const restart_index& index,
                           std::uint32_t k) noexcept;

/// Whether an APP9 segment's payload (after its length) is a restart index, of any version:
/// a rewrite drops an old one rather than keep an index that no longer matches.
bool is_restart_index_segment(const std::uint8_t* payload, std::size_t size) noexcept;

/// The bytes of the index segment of `rows` MCU rows, marker and length included.
std::size_t restart_index_segment_size(std::uint32_t rows) noexcept;

/// `jpeg` (one scan, restart markers every MCU row) with the index segment inserted before its
/// SOS; nullopt when the JPEG has no such structure (the row count differs from the restart
/// markers found, or more rows than one segment can list).
std::optional<std::vector<std::uint8_t>> with_restart_index(const std::vector<std::uint8_t>& jpeg);

}  // namespace conveyor
