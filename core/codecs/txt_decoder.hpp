#pragma once
/// A text part (WebDataset's "txt", "text", "transcript"): its bytes as they are, and the
/// UTF-8 check a recipe that tokenises text needs (a transcript that is not UTF-8 is damaged).

#include <cstddef>
#include <cstdint>
#include <string>

#include "conveyor/error.hpp"
#include "core/base/host_array.hpp"

namespace conveyor {

/// Success when `data` is well-formed UTF-8 (RFC 3629, as Python's bytes.decode("utf-8")
/// decides: no overlong forms, no surrogates, nothing past U+10FFFF, no cut sequence; a BOM
/// is a character like any other). errc::decode_error names the offset of the first byte
/// that breaks it. Thread-safe (pure).
expected<void> check_utf8(const std::uint8_t* data, std::size_t size);

/// The bytes unchanged, as uint8 [size] (no BOM stripped, no newline removed); with
/// `require_utf8`, check_utf8's error when they are not UTF-8. Thread-safe (pure).
expected<host_array> decode_txt(const std::uint8_t* data, std::size_t size,
                                bool require_utf8 = true);
inline expected<host_array> decode_txt(const std::string& text, bool require_utf8 = true) {
  return decode_txt(reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), require_utf8);
}

}  // namespace conveyor
