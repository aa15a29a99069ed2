#pragma once
/// Opens a sharded dataset directory (manifest + shards) for random access by a global record
/// index, 0 .. size()-1, in manifest order.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/dataset_manifest.hpp"
#include "core/storage/record.hpp"
#include "core/storage/shard_reader.hpp"

namespace conveyor {

/// Immutable after open: read() may be called concurrently.
class sharded_dataset {
 public:
  /// Validates the manifest and opens every shard; a shard whose record count or index
  /// checksum differs from the manifest is an error naming it.
  static expected<sharded_dataset> open(const std::filesystem::path& dir);
  /// The byte source of a shard the manifest lists (its file, or its object in a store).
  using shard_opener =
      std::function<expected<std::shared_ptr<const byte_source>>(const manifest_shard&)>;
  /// The same over a manifest already read, each shard's bytes from `open_shard`.
  static expected<sharded_dataset> open(dataset_manifest manifest, const shard_opener& open_shard);

  std::uint64_t size() const noexcept { return offsets_.empty() ? 0 : offsets_.back(); }
  const dataset_manifest& manifest() const noexcept { return manifest_; }
  const std::vector<shard_reader>& shards() const noexcept { return shards_; }

  struct location {
    std::size_t shard = 0;
    std::uint64_t record = 0;
  };
  /// Precondition: index < size().
  location locate(std::uint64_t index) const;

  expected<record> read(std::uint64_t index) const;
  /// shard_reader::check of the record at `index`; not_found when it is out of range.
  expected<void> check(std::uint64_t index, const record& got) const;

 private:
  sharded_dataset(dataset_manifest manifest, std::vector<shard_reader> shards);

  dataset_manifest manifest_;
  std::vector<shard_reader> shards_;
  std::vector<std::uint64_t> offsets_;  ///< offsets_[k] = records in shards before k+1
};

struct verify_report {
  std::uint64_t shards = 0;
  std::uint64_t records = 0;
  std::uint64_t payload_bytes = 0;
  std::vector<error> problems;  ///< one per bad shard or record; empty when all is well
};

/// Streams every record of every shard of the dataset in `dir` and checks its checksum.
/// `progress(records_done)` is called now and then when given. Fails only when the dataset
/// cannot be opened at all; bad records are listed in the report.
expected<verify_report> verify_dataset(const std::filesystem::path& dir,
                                       const std::function<void(std::uint64_t)>& progress = {});

}  // namespace conveyor
