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
/// It starts with a NUL byte, so no NumPy (.npy: "\x93NUMPY"), JPEG, PNG or text part is ever
/// taken for one. Opening a slice checks that the file is still the one described (device,
/// inode, size and modification time): a file replaced or rewritten since the record was read
/// is an error naming it, never other bytes read as the sample's.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/byte_source.hpp"

namespace conveyor {

/// Which file a descriptor was made from, as stat(2) tells it.
struct file_identity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  friend bool operator==(const file_identity& a, const file_identity& b) noexcept {
    return a.device == b.device && a.inode == b.inode && a.size == b.size &&
           a.mtime_ns == b.mtime_ns;
  }
};

/// Bytes [offset, offset + size) of the regular file at `path`.
struct file_slice {
  std::string path;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  file_identity file;
};

/// The identity of the regular file at `path`; errors (not_found, io_error) name it. Thread-safe.
expected<file_identity> identify_file(const std::filesystem::path& path);

/// The descriptor of `slice`. Pure.
std::vector<std::uint8_t> encode_file_slice(const file_slice& slice);

/// Whether [data, data + size) starts as a descriptor does (its 8 magic bytes). Pure.
bool is_file_slice(const std::uint8_t* data, std::size_t size) noexcept;

/// The slice a descriptor holds; errc::corrupt_shard naming what is wrong when its lengths do
/// not add up or the slice lies outside the file it names. Pure.
expected<file_slice> decode_file_slice(const std::uint8_t* data, std::size_t size);

/// The slice's bytes as a byte source of `slice.size` bytes (offsets relative to the slice),
/// read with pread from the file, opened now. Errors name the path: not_found, io_error, and
/// checksum_mismatch when the file is no longer the one described. Thread-safe.
expected<std::shared_ptr<const byte_source>> open_file_slice(const file_slice& slice);

}  // namespace conveyor
