#pragma once
/// The samples of an image dataset on disk: an ImageFolder layout (one sub-directory per
/// class) or a list file. Used by the folder reader of the pipeline and by the packer.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "conveyor/error.hpp"

namespace conveyor {

struct image_entry {
  std::filesystem::path path;
  std::int32_t label = 0;
  std::string key;  ///< path relative to the root, used in messages and as the record key
};

struct image_list {
  std::vector<std::string> class_names;  ///< indexed by label
  std::vector<image_entry> entries;
};

/// True for the extensions scanned as images: .jpg .jpeg .png .bmp .webp (any case).
bool is_image_file(const std::filesystem::path& path);

/// Scans `root`: each sub-directory is a class (sorted by name: labels 0..n-1), each image
/// file in it a sample (sorted by name). errc::not_found for a missing path, errc::io_error
/// for a path that is not a directory, errc::empty_dataset when no image is found.
expected<image_list> scan_image_folder(const std::filesystem::path& root);

/// Reads a list file: one `<path> <label>` per line ('#' comments and blank lines skipped;
/// relative paths are relative to the list file's directory); classes are named "0".."max".
/// errc::invalid_config naming file:line for a bad line.
expected<image_list> read_image_list_file(const std::filesystem::path& file);

}  // namespace conveyor
