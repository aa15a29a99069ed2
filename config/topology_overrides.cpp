#include "config/topology_overrides.hpp"

#include "core/base/quoted_string.hpp"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "config/schema_reader.hpp"

namespace conveyor::config_detail {
namespace {

std::string_view trim(std::string_view text) {
  constexpr std::string_view blanks = " \t\r\n";
  auto begin = text.find_first_not_of(blanks);
  if (begin == std::string_view::npos) {
    return {};
  }
  return text.substr(begin, text.find_last_not_of(blanks) - begin + 1);
}

bool is_bare_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

/// "pipeline.batch_size" -> {"pipeline", "batch_size"}; nullopt unless every part is a
/// non-empty TOML bare key.
std::optional<std::vector<std::string>> split_key_path(std::string_view path) {
  std::vector<std::string> keys(1);
  for (char c : path) {
    if (c == '.') {
      keys.emplace_back();
    } else if (is_bare_key_char(c)) {
      keys.back() += c;
    } else {
      return std::nullopt;
    }
  }
  for (const auto& key : keys) {
    if (key.empty()) {
      return std::nullopt;
    }
  }
  return keys;
}

/// A document whose only key "v" holds `value` parsed as TOML, else `value` as a string;
/// nullopt when it is neither (not UTF-8). Every node carries `source` as its path.
std::optional<toml::table> parse_value(std::string_view value, std::string_view source) {
  try {
    auto document = toml::parse("v = " + std::string(value), source);
    if (document.size() == 1 && document.contains("v")) {
      return document;
    }
  } catch (const toml::parse_error&) {
    // not a TOML value: a bare string
  }
  try {
    return toml::parse("v = " + quoted_string(value), source);
  } catch (const toml::parse_error&) {
    return std::nullopt;
  }
}

}  // namespace

expected<void> apply_override(toml::table& root, std::string_view override_text) {
  std::string source = std::string(override_prefix) + std::string(override_text);
  auto invalid = [&](const std::string& what) {
    return error(errc::invalid_config, source + ": " + what);
  };
  auto equals = override_text.find('=');
  if (equals == std::string_view::npos) {
    return invalid("expected key.path=value");
  }
  auto key_text = trim(override_text.substr(0, equals));
  auto keys = split_key_path(key_text);
  if (!keys) {
    return invalid("'" + std::string(key_text) +
                   "' is not a key path (bare keys joined by '.', e.g. pipeline.batch_size)");
  }
  auto value = parse_value(trim(override_text.substr(equals + 1)), source);
  if (!value) {
    return invalid("the value is neither a TOML value nor UTF-8 text");
  }
  toml::node& new_value = *value->get("v");
  toml::source_region where = new_value.source();
  toml::table* table = &root;
  std::string path;
  for (std::size_t i = 0; i + 1 < keys->size(); ++i) {
    const std::string& key = (*keys)[i];
    path += (i == 0 ? "" : ".") + key;
    toml::node* child = table->get(key);
    if (child == nullptr) {
      child = &table->insert(toml::key(key, where), toml::table{}).first->second;
    }
    table = child->as_table();
    if (table == nullptr) {
      return invalid("'" + path + "' is " + std::string(type_name(*child)) + ", not a table");
    }
  }
  table->insert_or_assign(toml::key(keys->back(), where), std::move(new_value));
  return {};
}

}  // namespace conveyor::config_detail
