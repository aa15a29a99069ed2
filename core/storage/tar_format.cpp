#include "core/storage/tar_format.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace conveyor::tar_format {
namespace {

// Offsets and sizes of the header fields used here.
constexpr std::size_t name_at = 0;
constexpr std::size_t name_size = 100;
constexpr std::size_t size_at = 124;
constexpr std::size_t size_size = 12;
constexpr std::size_t checksum_at = 148;
constexpr std::size_t checksum_size = 8;
constexpr std::size_t typeflag_at = 156;
constexpr std::size_t magic_at = 257;
constexpr std::size_t prefix_at = 345;
constexpr std::size_t prefix_size = 155;
// POSIX ustar's magic and version; GNU writes "ustar  \0" and keeps other fields in `prefix`.
constexpr char posix_magic[] = {'u', 's', 't', 'a', 'r', '\0', '0', '0'};

error bad(const std::string& what) {
  return error{errc::corrupt_shard, what};
}

// A NUL-terminated field, up to its first NUL.
std::string_view field_text(const std::uint8_t* field, std::size_t size) {
  const auto* text = reinterpret_cast<const char*>(field);
  return {text, static_cast<std::size_t>(std::find(text, text + size, '\0') - text)};
}

// A numeric field as tarfile reads it: base-256 when the first byte is 0x80 (0xff, negative,
// is refused), else octal digits up to the first NUL, with spaces around them; empty is 0.
std::optional<std::uint64_t> number(const std::uint8_t* field, std::size_t size) {
  if (field[0] == 0x80) {
    std::uint64_t n = 0;
    for (std::size_t i = 1; i < size; ++i) {
      if (n >> 56 != 0) {
        return std::nullopt;  // more than 64 bits
      }
      n = (n << 8) | field[i];
    }
    return n;
  }
  if (field[0] == 0xff) {
    return std::nullopt;
  }
  auto text = field_text(field, size);
  while (!text.empty() && text.front() == ' ') {
    text.remove_prefix(1);
  }
  while (!text.empty() && text.back() == ' ') {
    text.remove_suffix(1);
  }
  std::uint64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '7' || n >> 61 != 0) {
      return std::nullopt;
    }
    n = (n << 3) | static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

// Whether the stored checksum is the header's sum, its own field counted as spaces: the
// unsigned sum, or the signed one that some old tars wrote.
bool checksum_holds(const std::uint8_t* block) {
  auto stored = number(block + checksum_at, checksum_size);
  if (!stored) {
    return false;
  }
  std::uint64_t unsigned_sum = ' ' * checksum_size;
  std::int64_t signed_sum = ' ' * checksum_size;
  for (std::size_t i = 0; i < block_size; ++i) {
    if (i >= checksum_at && i < checksum_at + checksum_size) {
      continue;
    }
    unsigned_sum += block[i];
    signed_sum += static_cast<std::int8_t>(block[i]);
  }
  return *stored == unsigned_sum || static_cast<std::int64_t>(*stored) == signed_sum;
}

member_type type_of(char typeflag) {
  switch (typeflag) {
    case '0':
    case '\0':
    case '7':
      return member_type::regular;
    case 'L':
      return member_type::gnu_long_name;
    case 'x':
    case 'X':  // Solaris' name for the same
      return member_type::pax_header;
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
      return member_type::no_data;
    default:
      return member_type::other;
  }
}

std::string full_name(const std::uint8_t* block) {
  std::string name(field_text(block + name_at, name_size));
  if (std::memcmp(block + magic_at, posix_magic, sizeof posix_magic) == 0) {
    auto prefix = field_text(block + prefix_at, prefix_size);
    if (!prefix.empty()) {
      name = std::string(prefix) + "/" + name;
    }
  }
  return name;
}

// The decimal number `text` holds, if it is one.
std::optional<std::uint64_t> decimal(std::string_view text) {
  if (text.empty() || text.size() > 19) {
    return std::nullopt;
  }
  std::uint64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

}  // namespace

std::uint64_t padded_size(std::uint64_t size) noexcept {
  return (size + block_size - 1) / block_size * block_size;
}

bool is_zero_block(const std::uint8_t* block) noexcept {
  return std::all_of(block, block + block_size, [](std::uint8_t b) { return b == 0; });
}

expected<header> parse_header(const std::uint8_t* block) {
  if (!checksum_holds(block)) {
    return bad("header checksum mismatch");
  }
  header h;
  auto size = number(block + size_at, size_size);
  if (!size) {
    return bad("header size field is not a number");
  }
  h.size = *size;
  h.typeflag = static_cast<char>(block[typeflag_at]);
  h.type = type_of(h.typeflag);
  h.name = full_name(block);
  // A v7 tar marks a directory by a trailing '/' on a "regular" member.
  if (h.typeflag == '\0' && !h.name.empty() && h.name.back() == '/') {
    h.type = member_type::no_data;
  }
  return h;
}

std::string readable_name(const std::uint8_t* block, std::size_t available) {
  auto text = field_text(block + name_at, std::min(available, name_size));
  auto end = std::find_if(text.begin(), text.end(), [](char c) { return c < 0x20 || c > 0x7e; });
  return std::string(text.begin(), end);
}

expected<pax_fields> parse_pax(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  pax_fields out;
  std::size_t at = 0;
  while (at < text.size() && text[at] != '\0') {
    const auto record_at = "pax record at byte " + std::to_string(at);
    const auto space = text.find(' ', at);
    auto length = decimal(text.substr(at, space == std::string_view::npos ? 0 : space - at));
    // At least the digits, the space and the newline.
    if (!length || *length < space - at + 2 || *length > text.size() - at ||
        text[at + *length - 1] != '\n') {
      return bad(record_at + ": its length is not that of a record ending in a newline");
    }
    const auto record = text.substr(space + 1, at + *length - 1 - (space + 1));
    const auto equals = record.find('=');
    if (equals == std::string_view::npos || equals == 0) {
      return bad(record_at + ": not <key>=<value>");
    }
    const auto key = record.substr(0, equals);
    const auto value = record.substr(equals + 1);
    if (key == "path") {
      out.path = std::string(value);
    } else if (key == "size") {
      out.size = decimal(value);
      if (!out.size) {
        return bad(record_at + ": size=" + std::string(value.substr(0, 32)) + " is not a number");
      }
    }
    at += *length;
  }
  return out;
}

std::string long_name(const std::uint8_t* data, std::size_t size) {
  return std::string(field_text(data, size));
}

}  // namespace conveyor::tar_format
