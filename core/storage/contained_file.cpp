#include "core/storage/contained_file.hpp"

#include "core/storage/require_directory.hpp"

namespace conveyor {
namespace {

bool is_inside(const std::filesystem::path& target, const std::filesystem::path& root) {
  const auto relative = target.lexically_relative(root);
  return !relative.empty() && *relative.begin() != "..";
}

}  // namespace

expected<std::filesystem::path> canonical_directory(const std::filesystem::path& root) {
  if (auto ok = require_directory(root); !ok) {
    return std::move(ok).error();
  }
  std::error_code ec;
  auto canonical = std::filesystem::canonical(root, ec);
  if (ec) {
    return error{errc::io_error, root.string() + ": cannot be resolved: " + ec.message()};
  }
  return canonical;
}

expected<std::optional<std::filesystem::path>> contained_file(
    const std::filesystem::directory_entry& entry, const std::filesystem::path& root) {
  std::error_code ec;
  if (!entry.is_symlink(ec)) {
    return entry.is_regular_file(ec) ? std::optional(entry.path()) : std::nullopt;
  }
  auto target = std::filesystem::weakly_canonical(entry.path(), ec);
  if (ec) {
    return error{errc::io_error, entry.path().string() +
                                     ": a symbolic link that cannot be resolved: " + ec.message()};
  }
  if (!is_inside(target, root)) {
    return error{errc::invalid_argument,
                 entry.path().string() + " is a symbolic link to " + target.string() +
                     ", outside the dataset directory " + root.string() +
                     ": links out of it are not followed (copy the file in)"};
  }
  if (!std::filesystem::is_regular_file(target, ec)) {
    return std::optional<std::filesystem::path>();
  }
  return std::optional(std::move(target));
}

}  // namespace conveyor
