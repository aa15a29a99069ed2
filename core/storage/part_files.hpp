#pragma once
/// A directory of files as samples of several parts. Grouped by WebDataset's rule
/// (core/storage/webdataset_index.hpp split_member_name, on each file's path relative to the
/// directory): "a/000.jpg" and "a/000.cls" are the parts "jpg" and "cls" of sample "a/000"
/// (what conveyor-pack --parts packs). Or by the MLPerf UNet3D layout (`dataset.format =
/// "npy_pairs"`): "case_00000_x.npy" and "case_00000_y.npy" are the parts "x.npy" and "y.npy"
/// of sample "case_00000", as a WebDataset tar's "case_00000.x.npy" and "case_00000.y.npy".

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

/// Scans `root` and every directory under it. A symbolic link named as a part is followed only
/// to a regular file inside `root` (contained_file.hpp says why): it is named by its own path,
/// and its target is read. Errors: not_found for a missing path, io_error for a path that is not a
/// directory or cannot be listed, invalid_argument naming the files for a part name that is
/// not one (record_parts.hpp) or two files giving a sample the same part ("000.JPG" and
/// "000.jpg"), invalid_argument naming a link that leads out of `root` and where it leads,
/// empty_dataset when no file makes a sample.
expected<part_files_list> scan_part_files(const std::filesystem::path& root);

/// The same for the MLPerf layout: every `<key>_<name>.npy` file (split at the last '_' of its
/// base name) is part "<name>.npy" of sample "<key>" (with its directory under `root`); other
/// files are skipped. Errors as scan_part_files's ("no <key>_<name>.npy files").
expected<part_files_list> scan_npy_pairs(const std::filesystem::path& root);

/// The multipart record of `sample`: its files' bytes as they are, or for the parts named in
/// `mapped` a descriptor of the whole file (core/storage/file_slice.hpp) read in place later;
/// the label from its "cls" part (record_parts.hpp label_of_parts). Errors name the file that
/// cannot be read.
expected<record> read_part_files(const part_files& sample,
                                 const std::vector<std::string>& mapped = {});

}  // namespace conveyor
