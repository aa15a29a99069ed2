#pragma once
/// The check every directory scan starts with.

#include <filesystem>

#include "conveyor/error.hpp"

namespace conveyor {

/// `root` is a directory: else not_found for a missing path, io_error for anything else.
expected<void> require_directory(const std::filesystem::path& root);

}  // namespace conveyor
