#pragma once
/// Internal to config/: reads the tables of a parsed TOML document against the schema, one key
/// at a time, with type and range checks. Every failure goes to a `report` as
/// "<file:line:column>: <key path>: <what>"; a read that fails returns its fallback, so that a
/// section reader is a plain list of reads and the report decides what the loader returns.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "conveyor/error.hpp"

namespace conveyor::config_detail {

/// The source path of a value that came from an override is this prefix followed by the
/// override's text; messages then name the override instead of a line and column.
inline constexpr std::string_view override_prefix = "--set ";

/// The numbers a key accepts: bounds inclusive unless open. Only finite numbers are inside.
struct interval {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;
  bool max_open = false;
  std::string min_name;  ///< the key a lower bound comes from, when it comes from one

  bool contains(double value) const noexcept;
  /// ">= 1", "> 0", "in [0, 1]", "in (0, 100)", ">= backoff_min_ms (10)".
  std::string describe() const;
};

interval any_number();
interval at_least(double min);
interval above(double min);
interval closed(double min, double max);
interval open(double min, double max);

/// The problems found in one document; keeps the one to report. Single-threaded.
class report {
 public:
  explicit report(std::string document) : document_(std::move(document)) {}

  /// Records "<where>: <path>: <what>"; `where` is where `region` lies ("file:line:column", or
  /// the override's text), or the document's name when `region` is null or has no position.
  void fail(const toml::source_region* region, std::string_view path, std::string_view what);

  std::size_t error_count() const noexcept { return count_; }

  /// errc::invalid_config with the first problem in document order, then those of overrides
  /// (in the order met), then those without a position (missing keys); nullopt if none.
  std::optional<error> first() const;

  const std::string& document() const noexcept { return document_; }

 private:
  struct entry {
    int group = 0;
    std::uint64_t line = 0;
    std::uint64_t column = 0;
    std::size_t sequence = 0;
    std::string message;
  };

  std::string document_;
  std::size_t count_ = 0;
  std::optional<entry> first_;
};

/// "a string", "an integer", "a float", "an array", ...
std::string_view type_name(const toml::node& value) noexcept;

// Typed reads of one value, named `path` in messages: the value, or nullopt after a report.
std::optional<bool> read_boolean(report& errors, const toml::node& value, const std::string& path);
std::optional<std::string> read_string(report& errors, const toml::node& value,
                                       const std::string& path);
std::optional<std::int64_t> read_integer(report& errors, const toml::node& value,
                                         const std::string& path, const interval& range);
/// Integers are accepted where numbers are.
std::optional<double> read_number(report& errors, const toml::node& value, const std::string& path,
                                  const interval& range);

/// read_integer narrowed to Int: a value in `range` that Int cannot hold is reported too.
template <class Int>
std::optional<Int> read_int(report& errors, const toml::node& value, const std::string& path,
                            const interval& range) {
  auto read = read_integer(errors, value, path, range);
  if (!read) {
    return std::nullopt;
  }
  interval held = range;
  held.min = std::max(range.min, static_cast<double>(std::numeric_limits<Int>::min()));
  held.max = std::min(range.max, static_cast<double>(std::numeric_limits<Int>::max()));
  if (!held.contains(static_cast<double>(*read))) {
    errors.fail(&value.source(), path,
                "must be " + held.describe() + " (got " + std::to_string(*read) + ")");
    return std::nullopt;
  }
  return static_cast<Int>(*read);
}

/// The keys of one table (or of the document root). Each read marks its key as known, so that
/// reject_unknown_keys() can report the rest. Single-threaded; borrows the table and report.
class table_reader {
 public:
  /// `path` is the table's key path ("" for the root, "transform[2]"); a null `table` stands
  /// for an absent one, whose keys all read as absent.
  table_reader(report& errors, const toml::table* table, std::string path)
      : errors_(&errors), table_(table), path_(std::move(path)) {}

  /// The value at `key`, or null when absent.
  const toml::node* find(std::string_view key);
  /// The value at `key`, or null after reporting that the required key is missing.
  const toml::node* required(std::string_view key);

  // The value at `key`; `fallback` when it is absent or wrong (then reported).
  bool boolean(std::string_view key, bool fallback);
  std::string string(std::string_view key, std::string fallback);
  double number(std::string_view key, double fallback, const interval& range);
  template <class Int>
  Int integer(std::string_view key, Int fallback, const interval& range) {
    const auto* value = find(key);
    return value ? read_int<Int>(*errors_, *value, path_of(key), range).value_or(fallback)
                 : fallback;
  }
  /// "auto" reads as `auto_value`; otherwise an integer in `range`.
  int auto_or_integer(std::string_view key, int fallback, int auto_value, const interval& range);
  /// A string naming one of `values` (spelled as to_string(value) spells it).
  template <class Enum>
  Enum choice(std::string_view key, Enum fallback, std::initializer_list<Enum> values);
  /// An array of exactly N numbers.
  template <std::size_t N>
  std::array<double, N> numbers(std::string_view key, const std::array<double, N>& fallback);
  /// An array of 1 to `most` non-empty strings.
  std::vector<std::string> strings(std::string_view key, std::vector<std::string> fallback,
                                   std::size_t most = 64);
  /// An array of up to `most` integers, each in `range`.
  std::vector<std::int64_t> integers(std::string_view key, std::vector<std::int64_t> fallback,
                                     const interval& range, std::size_t most = 64);
  /// Every key of the table, in order (each counted as read).
  std::vector<std::string> keys();

  /// The sub-table at `key`; an absent one reads as empty, a value of another type is
  /// reported and reads as absent.
  table_reader table(std::string_view key);

  /// Reports each key of the table that no read asked for, with a near known key or the list.
  void reject_unknown_keys();

  /// Reports `what` about the value at `key` of this table.
  void fail(const toml::node& value, std::string_view key, std::string_view what);
  /// Reports `what` about this table as a whole.
  void fail_here(std::string_view what);

  /// "pipeline.batch_size", "transform[2].size", "gpus".
  std::string path_of(std::string_view key) const;
  report& errors() noexcept { return *errors_; }

 private:
  std::optional<std::string> choice_text(std::string_view key);
  bool array_of(std::string_view key, std::size_t size, const toml::array*& out);
  /// The array at `key` of 1 (0 with `empty_ok`) to `most` elements, or null after a report.
  const toml::array* bounded_array(std::string_view key, std::size_t most, bool empty_ok,
                                   std::string_view what);

  report* errors_;
  const toml::table* table_;
  std::string path_;
  std::vector<std::string> known_;
};

template <class Enum>
Enum table_reader::choice(std::string_view key, Enum fallback, std::initializer_list<Enum> values) {
  auto text = choice_text(key);
  if (!text) {
    return fallback;
  }
  std::string names;
  for (Enum value : values) {
    if (*text == to_string(value)) {
      return value;
    }
    names += (names.empty() ? "\"" : ", \"") + std::string(to_string(value)) + "\"";
  }
  fail(*find(key), key, "must be one of " + names + " (got \"" + *text + "\")");
  return fallback;
}

template <std::size_t N>
std::array<double, N> table_reader::numbers(std::string_view key,
                                            const std::array<double, N>& fallback) {
  const toml::array* array = nullptr;
  if (!array_of(key, N, array)) {
    return fallback;
  }
  std::array<double, N> out = fallback;
  for (std::size_t i = 0; i < N; ++i) {
    std::string element = path_of(key) + "[" + std::to_string(i) + "]";
    out[i] = read_number(*errors_, (*array)[i], element, any_number()).value_or(fallback[i]);
  }
  return out;
}

}  // namespace conveyor::config_detail
