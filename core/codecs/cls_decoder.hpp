#pragma once
/// A class label part (WebDataset's "cls", "cls2", "index", "inx", "id"): a decimal integer
/// as text.

#include <cstddef>
#include <cstdint>
#include <string>

#include "conveyor/error.hpp"
#include "core/base/host_array.hpp"

namespace conveyor {

/// The integer in `data` as an int32 scalar (rank 0). The text is ASCII: optional spaces,
/// tabs, CR or LF, an optional '+' or '-', decimal digits, optional spaces, tabs, CR or LF
/// (what WebDataset's int(data) reads, less Python's '_' separators and non-ASCII digits).
/// errc::decode_error names what is wrong: no digits, another character, a value outside
/// int32; the caller adds which part it was. Thread-safe (pure).
expected<host_array> decode_cls(const std::uint8_t* data, std::size_t size);
inline expected<host_array> decode_cls(const std::string& text) {
  return decode_cls(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
}

}  // namespace conveyor
