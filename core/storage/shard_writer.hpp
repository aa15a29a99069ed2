#pragma once
/// Writes one record shard (see shard_format.hpp). The file appears under its final name only
/// when finish() succeeds: until then it is written as "<path>.partial", so a crashed writer
/// never leaves a file that looks complete. The shard is version 1 when none of its records is
/// multipart, else version 2 (finish() sets the file header's version).

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/record.hpp"
#include "core/storage/shard_format.hpp"

namespace conveyor {

struct shard_summary {
  std::filesystem::path path;
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;           ///< size of the finished file
  std::uint64_t index_checksum = 0;  ///< as stored in the trailer
  std::uint32_t version = 0;         ///< shard_format::first_version or multipart_version
};

/// Single-threaded: one owner appends, then calls finish() once.
class shard_writer {
 public:
  static expected<shard_writer> create(const std::filesystem::path& path);

  /// Appends a single-part record.
  expected<void> append(std::string_view key, std::int32_t label, const std::uint8_t* payload,
                        std::uint64_t payload_size);
  /// Appends `r` as it is: a multipart record keeps its flag (its payload is not parsed here:
  /// the reader's parts_of checks it).
  expected<void> append(const record& r);
  /// Writes the index and trailer, flushes and renames the file to its final name.
  expected<shard_summary> finish();

  std::uint64_t bytes_written() const noexcept { return offset_; }
  std::uint64_t record_count() const noexcept { return index_.size(); }

 private:
  struct file_closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  shard_writer(std::filesystem::path path, std::unique_ptr<std::FILE, file_closer> file);
  expected<void> write(const std::uint8_t* data, std::size_t size);
  expected<void> append_record(std::string_view key, std::int32_t label, std::uint32_t flags,
                               const std::uint8_t* payload, std::uint64_t payload_size);
  expected<void> write_version();

  std::filesystem::path path_;
  std::filesystem::path partial_path_;
  std::unique_ptr<std::FILE, file_closer> file_;
  std::uint64_t offset_ = 0;
  std::vector<shard_format::index_entry> index_;
  std::uint32_t version_ = shard_format::first_version;
};

}  // namespace conveyor
