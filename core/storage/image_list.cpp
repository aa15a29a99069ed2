#include "core/storage/image_list.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "core/storage/require_directory.hpp"

namespace conveyor {
namespace {

std::vector<std::filesystem::path> sorted_children(const std::filesystem::path& dir,
                                                   bool directories, std::error_code& ec) {
  std::vector<std::filesystem::path> out;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    // Hidden entries (.ipynb_checkpoints, .DS_Store) are never classes or samples.
    auto hidden = it->path().filename().string().rfind('.', 0) == 0;
    if (!hidden && it->is_directory(ec) == directories) {
      out.push_back(it->path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

bool is_image_file(const std::filesystem::path& path) {
  auto ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp" || ext == ".webp";
}

expected<image_list> scan_image_folder(const std::filesystem::path& root) {
  if (auto ok = require_directory(root); !ok) {
    return std::move(ok).error();
  }
  std::error_code ec;
  image_list list;
  for (const auto& class_dir : sorted_children(root, true, ec)) {
    auto label = static_cast<std::int32_t>(list.class_names.size());
    list.class_names.push_back(class_dir.filename().string());
    for (const auto& file : sorted_children(class_dir, false, ec)) {
      if (is_image_file(file)) {
        list.entries.push_back({file, label, file.lexically_relative(root).string()});
      }
    }
  }
  if (ec) {
    return error{errc::io_error, root.string() + ": cannot list: " + ec.message()};
  }
  if (list.entries.empty()) {
    return error{errc::empty_dataset,
                 root.string() + ": no images (expected class sub-directories of .jpg/.png files)"};
  }
  return list;
}

expected<image_list> read_image_list_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) {
    return error{errc::not_found, file.string() + ": cannot open the list file"};
  }
  image_list list;
  std::int32_t max_label = -1;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream fields(line);
    std::string path;
    std::int32_t label = 0;
    std::string extra;
    if (!(fields >> path) || path[0] == '#') {
      continue;
    }
    if (!(fields >> label) || label < 0 || (fields >> extra)) {
      return error{errc::invalid_config, file.string() + ":" + std::to_string(number) +
                                             ": expected '<path> <label>' with a label >= 0"};
    }
    std::filesystem::path p(path);
    list.entries.push_back({p.is_relative() ? file.parent_path() / p : p, label, path});
    max_label = std::max(max_label, label);
  }
  if (list.entries.empty()) {
    return error{errc::empty_dataset, file.string() + ": the list names no images"};
  }
  for (std::int32_t l = 0; l <= max_label; ++l) {
    list.class_names.push_back(std::to_string(l));
  }
  return list;
}

}  // namespace conveyor
