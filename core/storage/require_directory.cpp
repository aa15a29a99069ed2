#include "core/storage/require_directory.hpp"

namespace conveyor {

expected<void> require_directory(const std::filesystem::path& root) {
  std::error_code ec;
  if (!std::filesystem::exists(root, ec)) {
    return error{errc::not_found, root.string() + ": no such file or directory"};
  }
  if (!std::filesystem::is_directory(root, ec)) {
    return error{errc::io_error, root.string() + ": not a directory"};
  }
  return {};
}

}  // namespace conveyor
