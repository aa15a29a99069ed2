#include "core/storage/record_parts.hpp"

#include <algorithm>
#include <limits>
#include <mutex>
#include <optional>
#include <set>

#include "core/base/little_endian.hpp"

namespace conveyor {
namespace {

namespace le = little_endian;

constexpr std::size_t count_size = 4;
constexpr std::size_t name_size_size = 2;
constexpr std::size_t part_size_size = 8;
// The least a table entry takes: a one-byte name.
constexpr std::size_t min_entry_size = name_size_size + 1 + part_size_size;

error container_error(std::string_view key, const std::string& what) {
  return error{errc::corrupt_shard, std::string(key) + ": part container: " + what};
}

bool is_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

std::string quoted(std::string_view name) {
  constexpr std::size_t shown = 64;
  auto text = std::string(name.substr(0, shown));
  return "\"" + text + (name.size() > shown ? "...\"" : "\"");
}

// The first name given twice in `names`, if any.
std::optional<std::string_view> first_duplicate(std::vector<std::string_view> names) {
  std::sort(names.begin(), names.end());
  auto at = std::adjacent_find(names.begin(), names.end());
  return at == names.end() ? std::nullopt : std::optional<std::string_view>(*at);
}

// Reads the name/size table; `at` ends past it. Sizes are checked against the bytes left.
expected<std::vector<part_view>> parse_table(const std::uint8_t* data, std::size_t size,
                                             std::string_view key, std::size_t& at) {
  const auto count = le::load<std::uint32_t>(data);
  at = count_size;
  if (count > (size - at) / min_entry_size) {
    return container_error(
        key, std::to_string(count) + " parts cannot fit in " + std::to_string(size) + " bytes");
  }
  std::vector<part_view> parts(count);
  std::uint64_t data_bytes = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    const auto part = "part " + std::to_string(i) + " of " + std::to_string(count);
    if (size - at < name_size_size) {
      return container_error(key, part + ": the table ends before its name length");
    }
    const auto name_size = le::load<std::uint16_t>(data + at);
    at += name_size_size;
    if (name_size > size - at || size - at - name_size < part_size_size) {
      return container_error(key, part + ": its name of " + std::to_string(name_size) +
                                      " bytes and its size run past the end");
    }
    parts[i].name = {reinterpret_cast<const char*>(data + at), name_size};
    at += name_size;
    const auto part_size = le::load<std::uint64_t>(data + at);
    at += part_size_size;
    if (!is_part_name(parts[i].name)) {
      return container_error(
          key, part + ": name " + quoted(parts[i].name) + " is not 1..255 bytes of [A-Za-z0-9._-]");
    }
    if (part_size > size - data_bytes) {  // bounded by `size`, so the sum cannot overflow
      return container_error(key, part + " (" + std::string(parts[i].name) + ") claims " +
                                      std::to_string(part_size) + " bytes, more than the " +
                                      std::to_string(size) + " of the payload");
    }
    parts[i].size = static_cast<std::size_t>(part_size);
    data_bytes += part_size;
  }
  return parts;
}

// The decimal integer `text` holds, if it is one (see label_of_parts).
std::optional<std::int32_t> decimal_label(std::string_view text) {
  const auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  };
  while (!text.empty() && space(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && space(text.back())) {
    text.remove_suffix(1);
  }
  const bool negative = !text.empty() && text.front() == '-';
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    text.remove_prefix(1);
  }
  if (text.empty() || text.size() > 10) {
    return std::nullopt;
  }
  std::int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    value = value * 10 + (c - '0');
  }
  value = negative ? -value : value;
  if (value < std::numeric_limits<std::int32_t>::min() ||
      value > std::numeric_limits<std::int32_t>::max()) {
    return std::nullopt;
  }
  return static_cast<std::int32_t>(value);
}

}  // namespace

// single_part_name(key) as a view that outlives the call: a constant for the usual names
// (ImageNet's ".JPEG" among them), else into the key itself when its extension is lowercase
// already, else into a process-wide set of the lowercased names met so far.
std::string_view single_part_view_name(std::string_view key) {
  static constexpr std::string_view usual[] = {"bin", "jpg", "jpeg", "png", "bmp", "webp"};
  auto name = single_part_name(key);
  for (auto known : usual) {
    if (name == known) {
      return known;
    }
  }
  if (key.size() >= name.size() && key.substr(key.size() - name.size()) == name) {
    return key.substr(key.size() - name.size());
  }
  static std::mutex mutex;
  static std::set<std::string, std::less<>> names;
  std::lock_guard<std::mutex> lock(mutex);
  return *names.insert(std::move(name)).first;
}

bool is_part_name(std::string_view name) noexcept {
  return !name.empty() && name.size() <= max_part_name_size &&
         std::all_of(name.begin(), name.end(), is_name_char);
}

expected<void> check_part_names(const std::vector<std::string_view>& names, std::string_view key) {
  for (auto name : names) {
    if (!is_part_name(name)) {
      return error{errc::invalid_argument, std::string(key) + ": part name " + quoted(name) +
                                               " is not 1..255 bytes of [A-Za-z0-9._-]"};
    }
  }
  if (auto twice = first_duplicate(names)) {
    return error{errc::invalid_argument,
                 std::string(key) + ": part " + quoted(*twice) + " is given twice"};
  }
  return {};
}

std::string single_part_name(std::string_view key) {
  const auto slash = key.find_last_of('/');
  const auto base = slash == std::string_view::npos ? key : key.substr(slash + 1);
  const auto dot = base.find_last_of('.');
  if (dot == std::string_view::npos || dot + 1 == base.size()) {
    return "bin";
  }
  return part_name_of_extension(base.substr(dot + 1));
}

std::string part_name_of_extension(std::string_view extension) {
  std::string name(extension);
  std::transform(name.begin(), name.end(), name.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return name;
}

expected<std::vector<part_view>> parse_parts(const std::uint8_t* data, std::size_t size,
                                             std::string_view key) {
  if (size < count_size) {
    return container_error(key, std::to_string(size) + " bytes is too short for a part count");
  }
  std::size_t at = 0;
  auto parts = parse_table(data, size, key, at);
  if (!parts) {
    return parts;
  }
  std::vector<std::string_view> names;
  names.reserve(parts->size());
  for (auto& part : *parts) {
    if (part.size > size - at) {
      return container_error(key, "part " + std::string(part.name) + " of " +
                                      std::to_string(part.size) + " bytes runs past the end");
    }
    part.data = data + at;
    at += part.size;
    names.push_back(part.name);
  }
  if (at != size) {
    return container_error(key, std::to_string(size - at) + " bytes follow the last part");
  }
  if (auto twice = first_duplicate(std::move(names))) {
    return container_error(key, "part " + quoted(*twice) + " is there twice");
  }
  return parts;
}

expected<std::vector<part_view>> parts_of(const record& r) {
  if (r.multipart) {
    return parse_parts(r.payload.data(), r.payload.size(), r.key);
  }
  return std::vector<part_view>{{single_part_view_name(r.key), r.payload.data(), r.payload.size()}};
}

const part_view* find_part(const std::vector<part_view>& parts, std::string_view wanted) {
  while (!wanted.empty()) {
    const auto end = wanted.find(';');
    const auto alternative = wanted.substr(0, end);
    wanted = end == std::string_view::npos ? std::string_view{} : wanted.substr(end + 1);
    if (alternative.empty()) {
      continue;
    }
    for (const auto& part : parts) {
      if (part.name == alternative) {
        return &part;
      }
    }
  }
  return nullptr;
}

std::vector<std::uint8_t> encode_part_table(
    const std::vector<std::pair<std::string_view, std::uint64_t>>& names_and_sizes) {
  std::size_t bytes = count_size;
  for (const auto& [name, size] : names_and_sizes) {
    bytes += name_size_size + name.size() + part_size_size;
  }
  std::vector<std::uint8_t> out(bytes);
  le::store<std::uint32_t>(out.data(), static_cast<std::uint32_t>(names_and_sizes.size()));
  std::size_t at = count_size;
  for (const auto& [name, size] : names_and_sizes) {
    le::store<std::uint16_t>(out.data() + at, static_cast<std::uint16_t>(name.size()));
    at += name_size_size;
    std::copy(name.begin(), name.end(), out.begin() + static_cast<std::ptrdiff_t>(at));
    at += name.size();
    le::store<std::uint64_t>(out.data() + at, size);
    at += part_size_size;
  }
  return out;
}

std::vector<std::uint8_t> encode_parts(
    const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& parts) {
  std::vector<std::pair<std::string_view, std::uint64_t>> table;
  table.reserve(parts.size());
  for (const auto& [name, bytes] : parts) {
    table.emplace_back(name, bytes.size());
  }
  auto out = encode_part_table(table);
  for (const auto& part : parts) {
    out.insert(out.end(), part.second.begin(), part.second.end());
  }
  return out;
}

std::int32_t label_of_parts(const std::vector<part_view>& parts) {
  const auto* cls = find_part(parts, "cls");
  if (cls == nullptr) {
    return 0;
  }
  return decimal_label({reinterpret_cast<const char*>(cls->data), cls->size}).value_or(0);
}

}  // namespace conveyor
