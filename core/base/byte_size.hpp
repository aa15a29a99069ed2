#pragma once
/// Sizes on command lines and in topologies: "64M", "1G", "500K", "1234" (bytes; K/M/G/T are powers
/// of 1024, an optional trailing "B" or "iB" is accepted).

#include <cstdint>
#include <string_view>

#include "conveyor/error.hpp"

namespace conveyor {

/// errc::invalid_argument naming the text when it is not a positive size.
expected<std::uint64_t> parse_byte_size(std::string_view text);

}  // namespace conveyor
