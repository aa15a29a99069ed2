#pragma once
/// A read-only, random-access source of bytes: a file on disk (pread) or a buffer in memory
/// (tests, fuzzing). Shard readers work on this, never on file descriptors directly.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {

/// Thread-safe: read_at and will_need may be called concurrently from any thread.
class byte_source {
 public:
  virtual ~byte_source() = default;
  /// The name used in error messages (the file's path).
  virtual const std::string& name() const noexcept = 0;
  virtual std::uint64_t size() const noexcept = 0;
  /// Reads exactly `n` bytes at `offset` into `dst`; an error if fewer are available.
  virtual expected<void> read_at(std::uint64_t offset, std::uint8_t* dst, std::size_t n) const = 0;
  /// A hint that [offset, offset + n) will be read soon (kernel read-ahead); may do nothing.
  virtual void will_need(std::uint64_t offset, std::uint64_t n) const noexcept;
};

/// Opens a regular file for reading, as open_regular_file does (core/base/regular_file.hpp:
/// no FIFO or device, bounded in time). Errors name the path.
expected<std::shared_ptr<const byte_source>> open_file_source(const std::filesystem::path& path);

/// Bytes [offset, offset + size) of the file open at `fd` as a byte source of `size` bytes
/// (offsets relative to `offset`), read with pread; it owns `fd`. Reads past `size` are
/// errors; a file shorter than offset + size gives an error when the read reaches its end.
/// `name` appears in error messages.
std::shared_ptr<const byte_source> make_file_source(unique_fd fd, std::string name,
                                                    std::uint64_t offset, std::uint64_t size);

/// The whole of a regular file's bytes. Errors name the path.
expected<std::vector<std::uint8_t>> read_whole_file(const std::filesystem::path& path);

/// Wraps a buffer; `name` appears in error messages.
std::shared_ptr<const byte_source> make_memory_source(std::vector<std::uint8_t> bytes,
                                                      std::string name);

/// Views [data, data + size) without copying it: the caller keeps those bytes alive and
/// unchanged while the source is used.
std::shared_ptr<const byte_source> make_view_source(const std::uint8_t* data, std::size_t size,
                                                    std::string name);

}  // namespace conveyor
