#pragma once
/// Where the samples of a dataset come from: a directory of record shards, an image folder
/// (class sub-directories of image files), a WebDataset tar set (core/storage/webdataset.hpp),
/// a directory of MLPerf-style `<key>_<name>.npy` files (core/storage/part_files.hpp), or a
/// LibriSpeech directory (core/storage/librispeech.hpp). All give records by dataset index.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/record.hpp"

namespace conveyor {

/// python: a Python Dataset, whose samples its worker processes make (core/python/): opened by
/// the node's [python] section, never by open_sample_source.
enum class dataset_format : std::uint8_t {
  shards,
  folder,
  webdataset,
  npy_pairs,
  librispeech,
  python
};

class minio_cache;
class sharded_dataset;
class webdataset;

/// A stored piece of a sample: `size` bytes at `offset` of the file shard_of() names.
struct storage_extent {
  std::uint64_t file = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

/// Immutable after open: every method may be called concurrently.
class sample_source {
 public:
  virtual ~sample_source() = default;
  virtual std::uint64_t size() const noexcept = 0;
  /// Indexed by label; empty for a WebDataset (its labels are its samples' cls parts).
  virtual const std::vector<std::string>& class_names() const noexcept = 0;
  /// Where sample `id` lives ("<file>", "<shard> record <i>" or "<tar> key <key>"), for
  /// messages. Precondition: id < size().
  virtual std::string locate(std::uint64_t id) const = 0;
  /// Reads sample `id`; errors name its file, its shard and record, or its tar and key.
  virtual expected<record> read(std::uint64_t id) const = 0;
  /// Whether `got` (a copy from elsewhere: a peer's) is sample `id` as this dataset stores it;
  /// an error (checksum_mismatch, or a read's) names the sample and what differs. As much as
  /// the dataset can tell cheaply: record shards check the key, label, multipart flag and
  /// payload against the record's stored header and checksum (one read of its header and key);
  /// an image folder checks the key, label and payload size (its files carry no checksum); a
  /// WebDataset checks the key, the parts' names and sizes, and the cls part and label (one
  /// small read; webdataset::check). This default reads the sample and compares all of it.
  /// Precondition: id < size().
  virtual expected<void> check(std::uint64_t id, const record& got) const;
  /// The bytes sample `id` takes in storage (its record, its file, or its part container for a
  /// WebDataset sample; 0 when that cannot be told, e.g. a file gone since the scan). A folder
  /// asks the file system each time.
  virtual std::uint64_t stored_bytes(std::uint64_t id) const = 0;
  /// The shard sample `id` lies in (its record shard's index in the dataset's manifest, or its
  /// tar's index in name order); nullopt for a dataset that is not in shards.
  virtual std::optional<std::uint64_t> shard_of(std::uint64_t id) const = 0;
  /// The files the samples are stored in (the record shards, every image file, or the tars), for
  /// tools that manage their pages (conveyor-analyze drops them from the page cache).
  virtual std::vector<std::filesystem::path> files() const = 0;
  /// Where sample `id`'s bytes lie in its shard: its record in a record shard, each part's data
  /// in a WebDataset tar, in order; empty for a dataset that is not in shards. Precondition:
  /// id < size().
  virtual std::vector<storage_extent> extents(std::uint64_t id) const;

  /// The readers were just handed samples `ids` of epoch `epoch`, in this order: a dataset in an
  /// object store fetches them ahead (core/remote/read_ahead.hpp). A local dataset does nothing.
  /// Called from the batcher's thread: it must not block.
  virtual void will_read(std::uint64_t epoch, const std::vector<std::uint64_t>& ids) const;
  /// The cache in front of this dataset: a dataset in an object store reads the samples the
  /// cache holds no more, and fetches the cache's samples in whole blocks, once. Call once,
  /// before the dataset is read. A local dataset does nothing.
  virtual void use_cache(std::shared_ptr<const minio_cache> cache) const;
};

/// A sample source over a record shard set or a WebDataset already open (their files may be
/// objects in a store: core/remote/remote_dataset.hpp).
std::shared_ptr<const sample_source> make_shard_source(sharded_dataset dataset);
std::shared_ptr<const sample_source> make_webdataset_source(webdataset tars);

/// Opens the dataset at `path`. `in_place` (`dataset.map_parts`) names the parts of
/// multipart samples (WebDataset, npy_pairs) that read() leaves in their file, as descriptors
/// (core/storage/file_slice.hpp); errc::invalid_config when the format has no named parts.
/// Errors: not_found for a missing path, empty_dataset for a dataset without samples, and what
/// the shard reader, folder scan or tar index reports.
expected<std::shared_ptr<const sample_source>> open_sample_source(
    const std::filesystem::path& path, dataset_format format,
    const std::vector<std::string>& in_place = {});

}  // namespace conveyor
