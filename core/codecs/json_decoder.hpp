#pragma once
/// Numbers from a JSON part (WebDataset's "json", "jsn") as host_arrays: the boxes and class
/// ids of a detection sample, {"boxes": [[x0, y0, x1, y1], ...], "classes": [1, 5]}. Parsed
/// with nlohmann-json, within limits, so a hostile document cannot allocate without bound.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/host_array.hpp"

namespace conveyor {

struct json_limits {
  /// Longer documents are refused before parsing (a parsed value costs ~16 bytes per number,
  /// so 4 MiB of text stays within ~100 MiB).
  std::size_t max_bytes = std::size_t{4} << 20;
  /// Arrays or objects nested deeper than this are refused.
  int max_depth = 32;
};

/// A parsed JSON document: parse a part once, then take each of its fields with json_array.
/// Immutable after parse; json_array may read it from several threads at once.
class json_document {
 public:
  /// errc::decode_error names what is wrong: longer than max_bytes, nested deeper than
  /// max_depth, not JSON (nlohmann's message, with the byte position), not UTF-8 in a string.
  static expected<json_document> parse(const std::uint8_t* data, std::size_t size,
                                       const json_limits& limits = {});
  static expected<json_document> parse(const std::string& text, const json_limits& limits = {}) {
    return parse(reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), limits);
  }

  json_document(json_document&&) noexcept;
  json_document& operator=(json_document&&) noexcept;
  ~json_document();

  struct value;  ///< the parsed value (nlohmann::json, kept out of this header)
  const value& root() const noexcept { return *root_; }

 private:
  explicit json_document(std::unique_ptr<value> root);
  std::unique_ptr<value> root_;
};

/// The numbers at `key_path` in `document` as a host_array of `type`.
/// - key_path: object keys separated by '.', and decimal indices into arrays
///   ("annotations.0.bbox"); "" is the whole document.
/// - A number gives a scalar (rank 0), an array of numbers rank 1, arrays of equal-length
///   arrays rank 2 to 4, in C order. A ragged array is an error naming the key path and
///   the index where it breaks.
/// - inner_shape: the extents after the first axis, when the caller knows them ({4} for
///   boxes). An empty array then has shape [0, inner_shape...] instead of [0]; a non-empty
///   one must have exactly these inner extents.
/// - Integer dtypes take integers, or numbers with an integral value ("5.0"), in their
///   range; float32 and float16 take any number, rounded to nearest (float16 through float32),
///   that stays finite. bfloat16 is refused (ask float32 and convert). true, false, null and
///   strings are errors.
/// errc::not_found when key_path names nothing; errc::invalid_argument for bfloat16 or an
/// inner_shape of more than 3 extents or a negative one; errc::decode_error for the rest,
/// naming the key path. Thread-safe.
expected<host_array> json_array(const json_document& document, std::string_view key_path,
                                dtype type, const std::vector<std::int64_t>& inner_shape = {});

/// json_document::parse, then json_array: one field from one part.
expected<host_array> json_to_array(const std::uint8_t* data, std::size_t size,
                                   std::string_view key_path, dtype type,
                                   const std::vector<std::int64_t>& inner_shape = {},
                                   const json_limits& limits = {});

}  // namespace conveyor
