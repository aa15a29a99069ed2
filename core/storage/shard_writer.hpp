#pragma once
/// Writes one record shard (see shard_format.hpp). The file appears under its final name only
/// when finish() succeeds: until then it is written as "<path>.partial", so a crashed writer
/// never leaves a file that looks complete.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/shard_format.hpp"

namespace conveyor {

struct shard_summary {
  std::filesystem::path path;
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;           ///< size of the finished file
  std::uint64_t index_checksum = 0;  ///< as stored in the trailer
};

/// Single-threaded: one owner appends, then calls finish() once.
class shard_writer {
 public:
  static expected<shard_writer> create(const std::filesystem::path& path);

  expected<void> append(std::string_view key, std::int32_t label, const std::uint8_t* payload,
                        std::uint64_t payload_size);
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

  std::filesystem::path path_;
  std::filesystem::path partial_path_;
  std::unique_ptr<std::FILE, file_closer> file_;
  std::uint64_t offset_ = 0;
  std::vector<shard_format::index_entry> index_;
};

}  // namespace conveyor
