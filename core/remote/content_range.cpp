#include "core/remote/content_range.hpp"

#include <cctype>
#include <limits>

namespace conveyor {
namespace {

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

// Decimal digits only, within 64 bits.
std::optional<std::uint64_t> number(std::string_view digits) {
  if (digits.empty()) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
      return std::nullopt;
    }
    value = value * 10 + digit;
  }
  return value;
}

// A store's header as a message shows it: trimmed, and clipped.
std::string shown(std::string_view value) {
  constexpr std::size_t most = 80;
  value = trimmed(value);
  return value.size() <= most ? std::string(value) : std::string(value.substr(0, most)) + "...";
}

bool starts_with_unit(std::string_view text) {
  constexpr std::string_view unit = "bytes ";
  if (text.size() < unit.size()) {
    return false;
  }
  for (std::size_t i = 0; i < unit.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != unit[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<content_range> parse_content_range(std::string_view value) {
  value = trimmed(value);
  if (!starts_with_unit(value)) {
    return std::nullopt;
  }
  value = trimmed(value.substr(6));
  const auto dash = value.find('-');
  const auto slash = value.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) {
    return std::nullopt;
  }
  auto first = number(value.substr(0, dash));
  auto last = number(value.substr(dash + 1, slash - dash - 1));
  if (!first || !last || *last < *first) {
    return std::nullopt;
  }
  content_range out{*first, *last, std::nullopt};
  const auto complete = value.substr(slash + 1);
  if (complete == "*") {
    return out;
  }
  out.complete = number(complete);
  if (!out.complete || *last >= *out.complete) {
    return std::nullopt;
  }
  return out;
}

std::optional<std::string> content_range_mismatch(std::optional<std::string_view> value,
                                                  std::uint64_t first, std::uint64_t size) {
  const auto last = first + size - 1;
  const std::string asked =
      "asked for bytes=" + std::to_string(first) + "-" + std::to_string(last) + ", ";
  if (!value) {
    return asked + "the answer (HTTP 206) has no Content-Range";
  }
  const auto got = parse_content_range(*value);
  if (!got) {
    return asked + "the answer's Content-Range \"" + shown(*value) + "\" is not one range of bytes";
  }
  if (got->first != first || got->last != last) {
    return asked + "the answer is for " + shown(*value);
  }
  return std::nullopt;
}

}  // namespace conveyor
