#pragma once
/// Rewriting a JPEG for partial decodes: conveyor-pack --restart. The coefficients are copied
/// losslessly (libjpeg-turbo's jpeg_read_coefficients / jpeg_write_coefficients, as jpegtran
/// -restart 1 -optimize does: the pixels stay the same, tested), a restart marker is written
/// after every MCU row, the Huffman tables are optimised, the APPn and COM segments are kept,
/// and the restart index (restart_index.hpp) is added, so that a decoder can start at the
/// MCU row a crop needs.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace conveyor {

/// The rewritten JPEG, or why the input is kept as it is.
struct restart_rewrite {
  std::optional<std::vector<std::uint8_t>> jpeg;  ///< nullopt: keep the input
  std::string kept_because;  ///< "not a JPEG", "progressive", "CMYK", libjpeg's error, ...
};

/// Rewrites `data` (see above). Progressive, arithmetic-coded and CMYK JPEGs, other formats and
/// JPEGs libjpeg finds corrupt are kept (the loader decodes them as before, or quarantines
/// them). Thread-safe.
restart_rewrite add_restart_index(const std::uint8_t* data, std::size_t size);

}  // namespace conveyor
