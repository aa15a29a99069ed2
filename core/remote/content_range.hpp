#pragma once
/// The Content-Range header of a 206 answer (RFC 9110, 14.4), which says which bytes of the
/// object the body holds: "bytes first-last/complete", or "bytes first-last/*" when the store
/// does not know the object's size. A range GET compares it with the range it asked before a
/// byte of the body is taken: a store that answers another range, or none, is not believed.
/// Pure functions: thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace conveyor {

struct content_range {
  std::uint64_t first = 0;
  std::uint64_t last = 0;                 ///< inclusive
  std::optional<std::uint64_t> complete;  ///< the object's size; nullopt for "*"
};

/// `value` (a header's value, spaces around it allowed) read as one satisfied range. nullopt
/// for anything else: another unit, several ranges, an unsatisfied range ("bytes */1234", a
/// 416's), a number that is not decimal digits or does not fit 64 bits, last before first, or
/// last past the complete size.
std::optional<content_range> parse_content_range(std::string_view value);

/// Why a 206 whose Content-Range is `value` (nullopt: it had none) is not the answer to a GET of
/// `size` bytes from `first` (size > 0): names what was asked and what came ("asked for
/// bytes=10-19, the answer is for bytes 0-9/100"). nullopt when it is exactly that range.
std::optional<std::string> content_range_mismatch(std::optional<std::string_view> value,
                                                  std::uint64_t first, std::uint64_t size);

}  // namespace conveyor
