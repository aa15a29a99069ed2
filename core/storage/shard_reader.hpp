#pragma once
/// Reads one record shard (version 1 or 2) with O(1) random access through its footer index.
/// The header, trailer and index are validated on open; each record's checksum on every read.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/byte_source.hpp"
#include "core/storage/record.hpp"
#include "core/storage/shard_format.hpp"

namespace conveyor {

/// Immutable after open: read() may be called concurrently from any thread.
class shard_reader {
 public:
  static expected<shard_reader> open(const std::filesystem::path& path);
  static expected<shard_reader> open(std::shared_ptr<const byte_source> source);

  std::uint64_t size() const noexcept { return index_.size(); }
  const std::string& name() const noexcept { return source_->name(); }
  const shard_format::trailer& trailer() const noexcept { return trailer_; }
  /// The shard's format version (shard_format::first_version or multipart_version).
  std::uint32_t version() const noexcept { return version_; }
  const shard_format::index_entry& entry(std::uint64_t i) const { return index_[i]; }
  const std::shared_ptr<const byte_source>& source() const noexcept { return source_; }

  /// Reads and checks record `i`. Errors name the shard and the record index.
  expected<record> read(std::uint64_t i) const;

  /// Parses a record from the exact bytes of index entry `i` and checks its checksum.
  expected<record> parse_record(std::uint64_t i, const std::uint8_t* bytes) const;

  /// Whether `got` is record `i` of this shard (a copy from elsewhere): its sizes against the
  /// index, then its key, label, multipart flag and payload against the record's stored header
  /// and checksum.
  /// Reads only the record's header and key (one read of 32 + key bytes). Errors
  /// (checksum_mismatch, or the read's) name the shard and the record.
  expected<void> check(std::uint64_t i, const record& got) const;

 private:
  shard_reader(std::shared_ptr<const byte_source> source, std::uint32_t version,
               shard_format::trailer t, std::vector<shard_format::index_entry> index);
  error out_of_range(std::uint64_t i) const;

  std::shared_ptr<const byte_source> source_;
  std::uint32_t version_;
  shard_format::trailer trailer_;
  std::vector<shard_format::index_entry> index_;
};

/// "<shard> record <i>", the place named by errors about one record.
std::string record_location(const std::string& shard, std::uint64_t i);

}  // namespace conveyor
