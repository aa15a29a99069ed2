#pragma once
/// A part of a record that stays in its file: `dataset.map_parts` names the parts (a CT
/// volume's `x.npy`, up to a GB) that a source does not read into the record; the record holds
/// a small descriptor of where the bytes are instead, and the step that needs them reads only
/// what it uses (a 128^3 crop of the volume), in pieces (core/transforms/volume_part.hpp).
///
/// Descriptor (a part's whole payload), integers little-endian:
///
///   "\0CVSLICE" | u64 offset | u64 size | u64 device | u64 inode | u64 file size
///   | i64 mtime (ns) | u16 path length | the file's path
///
/// Who may make one: only a dataset's own reader, for a part it left in place, and the record
/// says which of its parts those are (record::in_place). A descriptor is never recognised from
/// a part's bytes: bytes that merely look like one (a WebDataset member made so) are data, so
/// a dataset file cannot make the node open another file. Opening a slice opens only a regular
/// file, without blocking, within a time bound (core/base/regular_file.hpp), and checks
/// that it is still the one described (device, inode, size and modification time): a file
/// replaced or rewritten since the record was read is an error naming it, never other bytes
/// read as the sample's.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/byte_source.hpp"
#include "core/base/regular_file.hpp"

namespace conveyor {

/// Bytes [offset, offset + size) of the regular file at `path`.
struct file_slice {
  std::string path;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  file_identity file;
};

/// The descriptor of `slice`. Pure.
std::vector<std::uint8_t> encode_file_slice(const file_slice& slice);

/// The slice a descriptor holds; errc::corrupt_shard naming what is wrong when it is not one
/// (no magic), its lengths do not add up or the slice lies outside the file it names. Pure.
expected<file_slice> decode_file_slice(const std::uint8_t* data, std::size_t size);

/// The slice's bytes as a byte source of `slice.size` bytes (offsets relative to the slice),
/// read with pread from the file, opened now (open_regular_file). Errors name the path:
/// not_found, io_error, timed_out, and checksum_mismatch when the file is no longer the one
/// described. Thread-safe.
expected<std::shared_ptr<const byte_source>> open_file_slice(const file_slice& slice);

}  // namespace conveyor
