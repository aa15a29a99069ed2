#pragma once
/// A WebDataset tar set read as it is: a directory of `*.tar` files (sorted by name; other
/// files are ignored) or one `.tar` file. A tar has no index, so one is built in memory when
/// the set is opened, by walking every tar's headers (core/storage/tar_listing.hpp; the
/// members' data is seeked over, not read) and grouping members into samples
/// (core/storage/webdataset_index.hpp); it is not stored. After that, read(id) is O(1) random
/// access: one pread per part, straight into the record's part container.
///
/// A sample is a multipart record (record.hpp): key = WebDataset's key, one part per member
/// (named by its extension, lowercased), label = its "cls" part's integer (0 without one,
/// record_parts.hpp label_of_parts). Sample ids are stable for the same files: tars in name
/// order, samples in tar order. Every problem is confined to its sample: read() refuses it
/// with errc::corrupt_shard naming "<tar> key <key>" and the reason; every other sample reads.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/byte_source.hpp"
#include "core/storage/file_slice.hpp"
#include "core/storage/record.hpp"
#include "core/storage/record_parts.hpp"
#include "core/storage/webdataset_index.hpp"

namespace conveyor {

/// Immutable after open: every method may be called concurrently.
class webdataset {
 public:
  /// Opens the tar set at `path` (a directory of .tar files, or one .tar file). Errors:
  /// not_found for a missing path, empty_dataset when there is no tar or no sample, io_error
  /// when a tar cannot be opened or read. Damaged tars open: their damage is their samples'.
  static expected<webdataset> open(const std::filesystem::path& path);
  /// The same over tars already open (tests, fuzzing), in the order given.
  static expected<webdataset> open(std::vector<std::shared_ptr<const byte_source>> tars);

  /// From now on read() gives the parts named in `names` (`dataset.map_parts`: "x.npy") as
  /// descriptors of where they lie in their tar (core/storage/file_slice.hpp), not their bytes.
  /// Errors name a tar that is not a file on disk (one opened from memory). Not thread-safe:
  /// call it before the set is shared.
  expected<void> keep_in_place(std::vector<std::string> names);

  std::uint64_t size() const noexcept { return index_.size(); }
  const webdataset_index& index() const noexcept { return index_; }
  /// The tars' paths (their byte sources' names), in id order.
  std::vector<std::filesystem::path> files() const;
  /// "<tar> key <key>". Precondition: id < size().
  std::string locate(std::uint64_t id) const;
  /// The tar sample `id` lies in (its position in files()). Precondition: id < size().
  std::uint64_t tar_of(std::uint64_t id) const { return index_.at(id).tar; }
  /// The size of the payload read(id) gives: the part container (table and parts' bytes).
  std::uint64_t payload_size(std::uint64_t id) const;

  /// Sample `id` as a multipart record. Errors name "<tar> key <key>": corrupt_shard for a
  /// sample refused by the index, io_error for a failed read, not_found out of range.
  expected<record> read(std::uint64_t id) const;
  /// Whether `got` (a peer's copy) is sample `id`: its key, multipart flag, part names and
  /// sizes against the index, its "cls" part against the tar (one small read) and its label
  /// against that part. The other parts' bytes are not compared: a tar keeps no checksum of
  /// them (a full comparison would read the sample from storage, which a peer's copy is
  /// there to spare). With parts kept in place, `got` must be what read() gives, byte for
  /// byte (descriptors are small). Errors: checksum_mismatch naming what differs, or read()'s.
  expected<void> check(std::uint64_t id, const record& got) const;

 private:
  webdataset(std::vector<std::shared_ptr<const byte_source>> tars, webdataset_index index);
  expected<void> read_part(std::uint64_t id, const webdataset_index::part& p,
                           std::uint8_t* out) const;
  expected<void> check_label(std::uint64_t id, const std::vector<part_view>& parts,
                             std::int32_t label) const;
  error refused(std::uint64_t id, errc code, const std::string& why) const;

  expected<record> read_in_place(std::uint64_t id) const;

  std::vector<std::shared_ptr<const byte_source>> tars_;
  webdataset_index index_;
  std::vector<std::string> in_place_;          ///< part names read() leaves in their tar
  std::vector<file_identity> tar_identities_;  ///< per tar, when in_place_ is not empty
};

/// The .tar files of a WebDataset directory, sorted by name; or `path` itself when it is a
/// file. not_found for a missing path.
expected<std::vector<std::filesystem::path>> list_tar_files(const std::filesystem::path& path);

}  // namespace conveyor
