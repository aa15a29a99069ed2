#pragma once
/// A sharded dataset is a directory of shard files plus a manifest, "manifest.txt", a line
/// format that names every shard and class:
///
///   conveyor-dataset 1
///   class <label> <name>                                  (one per class, labels 0..n-1)
///   shard <file> <records> <bytes> <index-xxh3 as 16 hex digits>
///
/// Blank lines and lines starting with '#' are ignored. Errors name the file and line.

#include <cstdint>
#include <filesystem>
#include <istream>
#include <string>
#include <vector>

#include "conveyor/error.hpp"

namespace conveyor {

inline constexpr const char* manifest_file_name = "manifest.txt";

struct manifest_shard {
  std::string file;  ///< relative to the dataset directory
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;
  std::uint64_t index_checksum = 0;
};

struct dataset_manifest {
  std::vector<std::string> class_names;  ///< indexed by label
  std::vector<manifest_shard> shards;

  std::uint64_t total_records() const noexcept;
  std::uint64_t total_bytes() const noexcept;
};

expected<void> write_manifest(const std::filesystem::path& dir, const dataset_manifest& m);
expected<dataset_manifest> read_manifest(const std::filesystem::path& dir);
/// The manifest in `in` (the text of a manifest file); `name` (its path or URL) names it in
/// errors, with the line.
expected<dataset_manifest> parse_manifest(std::istream& in, const std::string& name);

}  // namespace conveyor
