#include "core/base/byte_size.hpp"

#include <cctype>
#include <string>

namespace conveyor {
namespace {

int unit_shift(std::string_view unit) {
  for (auto suffix : {std::string_view("iB"), std::string_view("B")}) {
    if (unit.size() >= suffix.size() && unit.substr(unit.size() - suffix.size()) == suffix) {
      unit.remove_suffix(suffix.size());
      break;
    }
  }
  if (unit.empty()) {
    return 0;
  }
  if (unit.size() != 1) {
    return -1;
  }
  switch (std::toupper(static_cast<unsigned char>(unit[0]))) {
    case 'K':
      return 10;
    case 'M':
      return 20;
    case 'G':
      return 30;
    case 'T':
      return 40;
    default:
      return -1;
  }
}

}  // namespace

expected<std::uint64_t> parse_byte_size(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
    ++digits;
  }
  int shift = unit_shift(text.substr(digits));
  if (digits == 0 || digits > 18 || shift < 0) {
    return error{errc::invalid_argument,
                 "'" + std::string(text) + "' is not a size (examples: 64M, 1G, 500K, 1234)"};
  }
  auto number = std::stoull(std::string(text.substr(0, digits)));
  if (number == 0 || number > (~std::uint64_t{0} >> shift)) {
    return error{errc::invalid_argument,
                 "'" + std::string(text) + "': a size must be positive and below 16 EiB"};
  }
  return number << shift;
}

}  // namespace conveyor
