#pragma once
/// A directory of `key.ext` files as samples of several parts, grouped by WebDataset's rule
/// (core/storage/webdataset_index.hpp split_member_name, on each file's path relative to the
/// directory): "a/000.jpg" and "a/000.cls" are the parts "jpg" and "cls" of sample "a/000".
/// What conveyor-pack --parts packs.

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/record.hpp"

namespace conveyor {

struct part_files {
  std::string key;
  /// (part name, file), sorted by part name.
  std::vector<std::pair<std::string, std::filesystem::path>> parts;
};

struct part_files_list {
  std::vector<part_files> samples;  ///< sorted by key
  std::uint64_t skipped = 0;        ///< files whose name has no extension, or starts with '.'
};

/// Scans `root` and every directory under it. Errors: not_found for a missing path, io_error
/// for a path that is not a directory or cannot be listed, invalid_argument naming the files
/// for a part name that is not one (record_parts.hpp) or two files giving a sample the same
/// part ("000.JPG" and "000.jpg"), empty_dataset when no file makes a sample.
expected<part_files_list> scan_part_files(const std::filesystem::path& root);

/// The multipart record of `sample`: its files' bytes as they are, the label from its "cls"
/// part (record_parts.hpp label_of_parts). Errors name the file that cannot be read.
expected<record> read_part_files(const part_files& sample);

}  // namespace conveyor
