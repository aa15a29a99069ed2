#pragma once
/// Writes a host_array as a NumPy .npy file (format 1.0, C order, little-endian), as
/// numpy.save writes it: the files NumPy, the MLPerf references and Conveyor's NPY decoder read.
/// Used by the synthetic volume generator (synthetic_volumes.hpp).

#include <filesystem>

#include "conveyor/error.hpp"
#include "core/base/host_array.hpp"

namespace conveyor {

/// Writes `a` to `path` (replaced if it exists): the header padded to a multiple of 64 bytes
/// as NumPy pads it, then the elements. errc::io_error naming the path when it cannot be
/// written whole.
expected<void> write_npy(const std::filesystem::path& path, const host_array& a);

}  // namespace conveyor
