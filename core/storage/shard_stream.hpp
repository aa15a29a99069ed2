#pragma once
/// Sequential streaming over a shard's records, in file order, with read-ahead: records are
/// read in large chunks and the kernel is asked to fetch the next chunk while the caller
/// works on the current one.

#include <cstdint>
#include <optional>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/record.hpp"
#include "core/storage/shard_reader.hpp"

namespace conveyor {

/// Single-threaded. Keeps a reference to the reader: the reader must outlive the stream.
class shard_stream {
 public:
  static constexpr std::uint64_t default_chunk_bytes = 8u << 20;

  explicit shard_stream(const shard_reader& reader,
                        std::uint64_t chunk_bytes = default_chunk_bytes);

  /// The next record, std::nullopt at the end, or an error naming shard and record.
  /// After an error the stream moves on to the following record.
  expected<std::optional<record>> next();
  /// Index of the record the next call to next() returns.
  std::uint64_t position() const noexcept { return next_; }

 private:
  expected<void> fill_from(std::uint64_t first);

  const shard_reader& reader_;
  std::uint64_t chunk_bytes_;
  std::uint64_t next_ = 0;
  std::uint64_t chunk_first_ = 0;  ///< first record held in chunk_
  std::uint64_t chunk_end_ = 0;    ///< one past the last record held in chunk_
  std::vector<std::uint8_t> chunk_;
};

}  // namespace conveyor
