#include "config/schema_reader.hpp"

#include <cmath>
#include <tuple>

#include "config/number_text.hpp"

namespace conveyor::config_detail {
namespace {

/// Levenshtein distance, for "did you mean" hints.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// " (did you mean 'x'?)" for a near known key, else " (known keys: a, b, c)".
std::string unknown_key_hint(std::string_view key, const std::vector<std::string>& known) {
  if (known.empty()) {
    return " (this table takes no keys)";
  }
  const std::string* nearest = &known.front();
  std::size_t best = edit_distance(key, *nearest);
  for (const auto& name : known) {
    if (auto distance = edit_distance(key, name); distance < best) {
      best = distance;
      nearest = &name;
    }
  }
  if (best <= 2 && best < nearest->size() / 2 + 1) {
    return " (did you mean '" + *nearest + "'?)";
  }
  std::string list;
  for (const auto& name : known) {
    list += (list.empty() ? "" : ", ") + name;
  }
  return " (known keys: " + list + ")";
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool interval::contains(double value) const noexcept {
  return std::isfinite(value) && (min_open ? value > min : value >= min) &&
         (max_open ? value < max : value <= max);
}

std::string interval::describe() const {
  bool has_min = std::isfinite(min);
  bool has_max = std::isfinite(max);
  if (has_min && has_max) {
    return std::string("in ") + (min_open ? "(" : "[") + number_text(min) + ", " +
           number_text(max) + (max_open ? ")" : "]");
  }
  if (has_min) {
    std::string bound =
        min_name.empty() ? number_text(min) : min_name + " (" + number_text(min) + ")";
    return (min_open ? "> " : ">= ") + bound;
  }
  if (has_max) {
    return (max_open ? "< " : "<= ") + number_text(max);
  }
  return "finite";
}

interval any_number() {
  return {};
}

interval at_least(double min) {
  interval out;
  out.min = min;
  return out;
}

interval above(double min) {
  interval out = at_least(min);
  out.min_open = true;
  return out;
}

interval closed(double min, double max) {
  interval out = at_least(min);
  out.max = max;
  return out;
}

interval open(double min, double max) {
  interval out = closed(min, max);
  out.min_open = true;
  out.max_open = true;
  return out;
}

void report::fail(const toml::source_region* region, std::string_view path, std::string_view what) {
  entry candidate;
  std::string where = document_;
  candidate.group = 2;
  if (region != nullptr && region->path && starts_with(*region->path, override_prefix)) {
    where = *region->path;
    candidate.group = 1;
  } else if (region != nullptr && region->begin.line > 0) {
    candidate.group = 0;
    candidate.line = region->begin.line;
    candidate.column = region->begin.column;
    where = (region->path ? *region->path : document_) + ":" + std::to_string(candidate.line) +
            ":" + std::to_string(candidate.column);
  }
  candidate.sequence = count_++;
  candidate.message = where + ": ";
  if (!path.empty()) {
    candidate.message.append(path).append(": ");
  }
  candidate.message.append(what);
  auto rank = [](const entry& e) { return std::tie(e.group, e.line, e.column, e.sequence); };
  if (!first_ || rank(candidate) < rank(*first_)) {
    first_ = std::move(candidate);
  }
}

std::optional<error> report::first() const {
  if (!first_) {
    return std::nullopt;
  }
  return error(errc::invalid_config, first_->message);
}

std::string_view type_name(const toml::node& value) noexcept {
  switch (value.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

namespace {

/// Reports "expected <what>, got <type of value>".
void wrong_type(report& errors, const toml::node& value, const std::string& path,
                std::string_view what) {
  errors.fail(&value.source(), path,
              "expected " + std::string(what) + ", got " + std::string(type_name(value)));
}

}  // namespace

std::optional<bool> read_boolean(report& errors, const toml::node& value, const std::string& path) {
  if (const auto* flag = value.as_boolean()) {
    return flag->get();
  }
  wrong_type(errors, value, path, "a boolean");
  return std::nullopt;
}

std::optional<std::string> read_string(report& errors, const toml::node& value,
                                       const std::string& path) {
  if (const auto* text = value.as_string()) {
    return text->get();
  }
  wrong_type(errors, value, path, "a string");
  return std::nullopt;
}

std::optional<std::int64_t> read_integer(report& errors, const toml::node& value,
                                         const std::string& path, const interval& range) {
  const auto* integer = value.as_integer();
  if (integer == nullptr) {
    wrong_type(errors, value, path, "an integer");
    return std::nullopt;
  }
  std::int64_t got = integer->get();
  if (!range.contains(static_cast<double>(got))) {
    errors.fail(&value.source(), path,
                "must be " + range.describe() + " (got " + std::to_string(got) + ")");
    return std::nullopt;
  }
  return got;
}

std::optional<double> read_number(report& errors, const toml::node& value, const std::string& path,
                                  const interval& range) {
  double got = 0.0;
  if (const auto* integer = value.as_integer()) {
    got = static_cast<double>(integer->get());
  } else if (const auto* floating = value.as_floating_point()) {
    got = floating->get();
  } else {
    wrong_type(errors, value, path, "a number");
    return std::nullopt;
  }
  if (!range.contains(got)) {
    errors.fail(&value.source(), path,
                "must be " + range.describe() + " (got " + number_text(got) + ")");
    return std::nullopt;
  }
  return got;
}

const toml::node* table_reader::find(std::string_view key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) {
    known_.emplace_back(key);
  }
  return table_ != nullptr ? table_->get(key) : nullptr;
}

const toml::node* table_reader::required(std::string_view key) {
  const auto* value = find(key);
  if (value == nullptr) {
    errors_->fail(nullptr, path_of(key), "required key is missing");
  }
  return value;
}

bool table_reader::boolean(std::string_view key, bool fallback) {
  const auto* value = find(key);
  return value ? read_boolean(*errors_, *value, path_of(key)).value_or(fallback) : fallback;
}

std::string table_reader::string(std::string_view key, std::string fallback) {
  const auto* value = find(key);
  if (value == nullptr) {
    return fallback;
  }
  return read_string(*errors_, *value, path_of(key)).value_or(std::move(fallback));
}

double table_reader::number(std::string_view key, double fallback, const interval& range) {
  const auto* value = find(key);
  return value ? read_number(*errors_, *value, path_of(key), range).value_or(fallback) : fallback;
}

int table_reader::auto_or_integer(std::string_view key, int fallback, int auto_value,
                                  const interval& range) {
  const auto* value = find(key);
  if (value == nullptr) {
    return fallback;
  }
  if (const auto* text = value->as_string()) {
    if (text->get() == "auto") {
      return auto_value;
    }
    fail(*value, key, "must be \"auto\" or an integer (got \"" + text->get() + "\")");
    return fallback;
  }
  if (!value->is_integer()) {
    wrong_type(*errors_, *value, path_of(key), "\"auto\" or an integer");
    return fallback;
  }
  return read_int<int>(*errors_, *value, path_of(key), range).value_or(fallback);
}

std::optional<std::string> table_reader::choice_text(std::string_view key) {
  const auto* value = find(key);
  return value ? read_string(*errors_, *value, path_of(key)) : std::nullopt;
}

bool table_reader::array_of(std::string_view key, std::size_t size, const toml::array*& out) {
  const auto* value = find(key);
  if (value == nullptr) {
    return false;
  }
  std::string what = "an array of " + std::to_string(size) + " numbers";
  out = value->as_array();
  if (out == nullptr) {
    wrong_type(*errors_, *value, path_of(key), what);
    return false;
  }
  if (out->size() != size) {
    fail(*value, key, "expected " + what + ", got " + std::to_string(out->size()));
    return false;
  }
  return true;
}

const toml::array* table_reader::bounded_array(std::string_view key, std::size_t most,
                                               bool empty_ok, std::string_view what) {
  const auto* value = find(key);
  if (value == nullptr) {
    return nullptr;
  }
  const auto* array = value->as_array();
  if (array == nullptr) {
    wrong_type(*errors_, *value, path_of(key), std::string(what));
    return nullptr;
  }
  if ((array->empty() && !empty_ok) || array->size() > most) {
    fail(*value, key,
         "expected " + std::string(what) + " of " + (empty_ok ? "0" : "1") + " to " +
             std::to_string(most) + ", got " + std::to_string(array->size()));
    return nullptr;
  }
  return array;
}

std::vector<std::string> table_reader::strings(std::string_view key,
                                               std::vector<std::string> fallback,
                                               std::size_t most) {
  const auto* array = bounded_array(key, most, false, "an array of strings");
  if (array == nullptr) {
    return fallback;
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < array->size(); ++i) {
    auto path = path_of(key) + "[" + std::to_string(i) + "]";
    auto text = read_string(*errors_, (*array)[i], path);
    if (!text) {
      return fallback;
    }
    if (text->empty()) {
      errors_->fail(&(*array)[i].source(), path, "must not be empty");
      return fallback;
    }
    out.push_back(std::move(*text));
  }
  return out;
}

std::vector<std::int64_t> table_reader::integers(std::string_view key,
                                                 std::vector<std::int64_t> fallback,
                                                 const interval& range, std::size_t most) {
  const auto* array = bounded_array(key, most, true, "an array of integers");
  if (array == nullptr) {
    return fallback;
  }
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < array->size(); ++i) {
    auto value =
        read_integer(*errors_, (*array)[i], path_of(key) + "[" + std::to_string(i) + "]", range);
    if (!value) {
      return fallback;
    }
    out.push_back(*value);
  }
  return out;
}

std::vector<std::string> table_reader::keys() {
  std::vector<std::string> out;
  if (table_ != nullptr) {
    for (const auto& [k, v] : *table_) {
      out.emplace_back(k.str());
      known_.emplace_back(k.str());
    }
  }
  return out;
}

table_reader table_reader::table(std::string_view key) {
  const auto* value = find(key);
  if (value != nullptr && !value->is_table()) {
    wrong_type(*errors_, *value, path_of(key), "a table");
    value = nullptr;
  }
  return table_reader(*errors_, value ? value->as_table() : nullptr, path_of(key));
}

void table_reader::reject_unknown_keys() {
  if (table_ == nullptr) {
    return;
  }
  for (auto&& [key, value] : *table_) {
    if (std::find(known_.begin(), known_.end(), key.str()) == known_.end()) {
      errors_->fail(&key.source(), path_of(key.str()),
                    "unknown key" + unknown_key_hint(key.str(), known_));
    }
  }
}

void table_reader::fail(const toml::node& value, std::string_view key, std::string_view what) {
  errors_->fail(&value.source(), path_of(key), what);
}

void table_reader::fail_here(std::string_view what) {
  errors_->fail(table_ != nullptr ? &table_->source() : nullptr, path_, what);
}

std::string table_reader::path_of(std::string_view key) const {
  if (path_.empty()) {
    return std::string(key);
  }
  std::string out = path_;
  out.append(".").append(key);
  return out;
}

}  // namespace conveyor::config_detail
