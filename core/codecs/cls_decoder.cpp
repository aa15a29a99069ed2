#include "core/codecs/cls_decoder.hpp"

#include <charconv>
#include <cstring>
#include <string_view>

namespace conveyor {
namespace {

bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/// The text, quoted and cut short, for a message.
std::string shown(std::string_view text) {
  constexpr std::size_t max_shown = 32;
  std::string out = "'";
  for (char c : text.substr(0, max_shown)) {
    out += c >= 0x20 && c < 0x7f ? std::string(1, c) : "?";
  }
  return out + (text.size() > max_shown ? "...'" : "'");
}

}  // namespace

expected<host_array> decode_cls(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return error(errc::decode_error, "cls: no integer in " + shown(text));
  }
  std::string_view number = text.substr(first);
  while (is_space(number.back())) {
    number.remove_suffix(1);
  }
  const bool plus = number.front() == '+';
  if (plus) {
    number.remove_prefix(1);  // from_chars reads '-' but not '+'
  }
  std::int32_t value = 0;
  const char* end = number.data() + number.size();
  auto [stop, ec] = std::from_chars(number.data(), end, value);
  if (ec == std::errc::result_out_of_range) {
    return error(errc::decode_error, "cls: " + shown(text) + " is outside int32");
  }
  if (ec != std::errc() || stop != end || (plus && number.front() == '-')) {
    return error(errc::decode_error, "cls: " + shown(text) + " is not a decimal integer");
  }
  auto out = host_array::uninitialized(dtype::int32, {});
  *out.data<std::int32_t>() = value;
  return out;
}

}  // namespace conveyor
