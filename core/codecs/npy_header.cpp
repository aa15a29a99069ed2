#include "core/codecs/npy_header.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "core/base/little_endian.hpp"

namespace conveyor {
namespace {

constexpr std::array<std::uint8_t, 6> npy_magic{0x93, 'N', 'U', 'M', 'P', 'Y'};
/// Magic and version: the header length follows.
constexpr std::size_t version_end = 8;

error npy_error(const std::string& why) {
  return error(errc::decode_error, "npy: " + why);
}

/// How NumPy spells an element type Conveyor holds, without its byte-order character.
struct descr_code {
  std::string_view code;
  dtype type;
  bool is_bool;
};
constexpr descr_code descr_codes[] = {{"u1", dtype::uint8, false},  {"b1", dtype::uint8, true},
                                      {"i2", dtype::int16, false},  {"i4", dtype::int32, false},
                                      {"i8", dtype::int64, false},  {"f2", dtype::float16, false},
                                      {"f4", dtype::float32, false}};

/// What the dict says, before it is checked.
struct header_fields {
  std::optional<std::string_view> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<std::uint64_t>> shape;
};

/// A cursor over the header dict's text. It reads the small part of Python's literal syntax
/// that NumPy writes, strictly: anything else is an error, never a guess.
class dict_reader {
 public:
  explicit dict_reader(std::string_view text) : text_(text) {}

  /// Skips spaces, then consumes `c` if it comes next.
  bool take(char c) {
    skip_spaces();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  /// True when only spaces and newlines are left (NumPy pads the header with them).
  bool only_padding_left() {
    skip_spaces();
    return pos_ == text_.size();
  }

  /// 'text' or "text", without escapes.
  expected<std::string_view> string_literal() {
    skip_spaces();
    if (pos_ == text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      return npy_error("header dict: expected a string at byte " + std::to_string(pos_));
    }
    const char quote = text_[pos_++];
    const auto end = text_.find(quote, pos_);
    if (end == std::string_view::npos) {
      return npy_error("header dict: unterminated string at byte " + std::to_string(pos_ - 1));
    }
    auto value = text_.substr(pos_, end - pos_);
    if (value.find('\\') != std::string_view::npos) {
      return npy_error("header dict: escapes in strings are not read");
    }
    pos_ = end + 1;
    return value;
  }

  /// True or False.
  expected<bool> boolean() {
    skip_spaces();
    if (take_word("True")) {
      return true;
    }
    if (take_word("False")) {
      return false;
    }
    return npy_error("header dict: fortran_order is not True or False");
  }

  /// (), (5,), (2, 3) or (2, 3,): non-negative decimal integers, a Python 2 'L' allowed.
  expected<std::vector<std::uint64_t>> shape_tuple() {
    if (!take('(')) {
      return npy_error("header dict: shape is not a tuple");
    }
    std::vector<std::uint64_t> extents;
    bool comma_after_last = false;
    while (!take(')')) {
      if (!extents.empty() && !comma_after_last) {
        return npy_error("header dict: expected ',' or ')' in shape");
      }
      if (extents.size() == max_parsed_rank) {
        return npy_error("header dict: shape has more than " + std::to_string(max_parsed_rank) +
                         " dimensions");
      }
      auto extent = extent_literal();
      if (!extent) {
        return extent.error();
      }
      extents.push_back(*extent);
      comma_after_last = take(',');
    }
    if (extents.size() == 1 && !comma_after_last) {
      return npy_error("header dict: shape (n) is not a tuple; NumPy writes (n,)");
    }
    return extents;
  }

 private:
  /// NumPy's own limit (NPY_MAXDIMS): a longer tuple is not a shape NumPy wrote.
  static constexpr std::size_t max_parsed_rank = 32;

  bool take_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  void skip_spaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) {
      ++pos_;
    }
  }

  expected<std::uint64_t> extent_literal() {
    skip_spaces();
    const char* first = text_.data() + pos_;
    const char* last = text_.data() + text_.size();
    if (first == last || *first < '0' || *first > '9') {
      return npy_error("header dict: shape holds something other than non-negative integers");
    }
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() ||
        value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return npy_error("header dict: a shape extent does not fit in 63 bits");
    }
    if (*first == '0' && end - first > 1) {
      return npy_error("header dict: a shape extent has a leading zero");
    }
    pos_ = static_cast<std::size_t>(end - text_.data());
    if (pos_ < text_.size() && text_[pos_] == 'L') {
      ++pos_;
    }
    return value;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

/// Reads one value into `slot`, which must still be empty.
template <class T, class Read>
expected<void> read_once(std::optional<T>& slot, std::string_view key, Read read) {
  if (slot) {
    return npy_error("header dict: '" + std::string(key) + "' appears twice");
  }
  auto value = read();
  if (!value) {
    return value.error();
  }
  slot = std::move(*value);
  return {};
}

/// Reads the value of `key` into `fields`.
expected<void> read_value(dict_reader& reader, std::string_view key, header_fields& fields) {
  if (key == "descr") {
    return read_once(fields.descr, key, [&reader]() -> expected<std::string_view> {
      auto descr = reader.string_literal();
      if (!descr) {
        return npy_error("header dict: descr is not a string (structured dtypes are not read)");
      }
      return descr;
    });
  }
  if (key == "fortran_order") {
    return read_once(fields.fortran_order, key, [&reader] { return reader.boolean(); });
  }
  if (key == "shape") {
    return read_once(fields.shape, key, [&reader] { return reader.shape_tuple(); });
  }
  return npy_error("header dict: unexpected key '" + std::string(key) + "'");
}

/// The dict literal: its three keys, in any order, each once; a trailing comma allowed.
expected<header_fields> parse_dict(std::string_view text) {
  dict_reader reader(text);
  if (!reader.take('{')) {
    return npy_error("header is not a dict literal");
  }
  header_fields fields;
  while (!reader.take('}')) {
    if (reader.only_padding_left()) {
      return npy_error("header dict is not terminated by '}'");
    }
    auto key = reader.string_literal();
    if (!key) {
      return key.error();
    }
    if (!reader.take(':')) {
      return npy_error("header dict: expected ':' after '" + std::string(*key) + "'");
    }
    if (auto read = read_value(reader, *key, fields); !read) {
      return read.error();
    }
    if (reader.take(',')) {
      continue;
    }
    if (reader.take('}')) {
      break;
    }
    return npy_error(reader.only_padding_left()
                         ? "header dict is not terminated by '}'"
                         : "header dict: expected ',' or '}' after the value of '" +
                               std::string(*key) + "'");
  }
  if (!reader.only_padding_left()) {
    return npy_error("header dict: text after the closing '}'");
  }
  if (!fields.descr || !fields.fortran_order || !fields.shape) {
    return npy_error(std::string("header dict has no '") +
                     (!fields.descr           ? "descr"
                      : !fields.fortran_order ? "fortran_order"
                                              : "shape") +
                     "'");
  }
  return fields;
}

/// Fills the element type of `header` from `descr`.
expected<void> read_descr(std::string_view descr, npy_header& header) {
  auto unheld = npy_error("descr '" + std::string(descr) +
                          "' is not a dtype Conveyor holds (u1, b1, i2, i4, i8, f2, f4)");
  if (descr.size() != 3) {
    return unheld;
  }
  const char order = descr[0];
  for (const auto& entry : descr_codes) {
    if (entry.code != descr.substr(1)) {
      continue;
    }
    const bool multi_byte = size_of(entry.type) > 1;
    if (order != '<' && order != '>' && !(order == '|' && !multi_byte)) {
      return npy_error("descr '" + std::string(descr) + "': byte order '" + order +
                       "' is not one NumPy writes for this type");
    }
    header.type = entry.type;
    header.is_bool = entry.is_bool;
    header.big_endian = order == '>' && multi_byte;
    return {};
  }
  return unheld;
}

/// Fills the shape and byte count of `header`. Every product of extents (times the item size)
/// must fit in 63 bits, zero extents left out: a zero extent makes the whole product 0, but a
/// reader that works in pieces multiplies the others (a slab of Y x Z), as NumPy refuses such
/// a shape ("array is too big").
expected<void> read_shape(const std::vector<std::uint64_t>& extents, npy_header& header) {
  if (extents.size() > host_array::max_rank) {
    return npy_error("shape has rank " + std::to_string(extents.size()) +
                     "; Conveyor holds rank 0 to " + std::to_string(host_array::max_rank));
  }
  header.rank = static_cast<int>(extents.size());
  std::uint64_t nonzero = header.item_size();
  bool empty = false;
  bool overflow = false;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    header.shape[i] = static_cast<std::int64_t>(extents[i]);
    empty = empty || extents[i] == 0;
    if (extents[i] != 0) {
      overflow = overflow || __builtin_mul_overflow(nonzero, extents[i], &nonzero);
    }
  }
  constexpr auto max_bytes = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (overflow || nonzero > max_bytes) {
    return npy_error("header says " + header.describe() +
                     ": its extents multiply to more bytes than 63 bits count");
  }
  header.data_bytes = empty ? 0 : nonzero;
  return {};
}

}  // namespace

std::string npy_header::describe() const {
  std::string out;
  for (int i = 0; i < rank; ++i) {
    out += (i == 0 ? "" : "x") + std::to_string(shape[static_cast<std::size_t>(i)]);
  }
  out += rank == 0 ? "scalar " : " ";
  out += is_bool ? "bool" : std::string(name_of(type));
  out += big_endian ? " big-endian" : "";
  out += fortran_order && rank > 1 ? " Fortran-order" : "";
  return out;
}

expected<std::uint64_t> npy_header_size(const std::uint8_t* head, std::size_t head_size) {
  if (head_size < npy_magic.size() || std::memcmp(head, npy_magic.data(), npy_magic.size()) != 0) {
    return npy_error("not a .npy file (no \\x93NUMPY magic)");
  }
  if (head_size < version_end) {
    return npy_error("file ends inside the preamble (" + std::to_string(head_size) + " bytes)");
  }
  const int major = head[6];
  const int minor = head[7];
  if (major < 1 || major > 3 || minor != 0) {
    return npy_error("version " + std::to_string(major) + "." + std::to_string(minor) +
                     " is not one NumPy writes (1.0, 2.0, 3.0)");
  }
  const std::size_t length_end = version_end + (major == 1 ? 2 : 4);
  if (head_size < length_end) {
    return npy_error("file ends inside the preamble (" + std::to_string(head_size) + " bytes)");
  }
  const std::uint64_t length = major == 1 ? little_endian::load<std::uint16_t>(head + version_end)
                                          : little_endian::load<std::uint32_t>(head + version_end);
  if (length > max_npy_header_bytes) {
    return npy_error("header of " + std::to_string(length) + " bytes is longer than " +
                     std::to_string(max_npy_header_bytes));
  }
  return length_end + length;
}

expected<npy_header> parse_npy_header(const std::uint8_t* head, std::size_t head_size,
                                      std::uint64_t file_size) {
  auto data_offset = npy_header_size(head, head_size);
  if (!data_offset) {
    return data_offset.error();
  }
  if (*data_offset > head_size || *data_offset > file_size) {
    return npy_error("header needs " + std::to_string(*data_offset) + " bytes but " +
                     std::to_string(std::min<std::uint64_t>(head_size, file_size)) + " are there");
  }
  const std::size_t text_start = head[6] == 1 ? version_end + 2 : version_end + 4;
  auto fields = parse_dict(std::string_view(reinterpret_cast<const char*>(head) + text_start,
                                            *data_offset - text_start));
  if (!fields) {
    return fields.error();
  }
  npy_header header;
  header.data_offset = *data_offset;
  header.fortran_order = *fields->fortran_order;
  if (auto read = read_descr(*fields->descr, header); !read) {
    return read.error();
  }
  if (auto read = read_shape(*fields->shape, header); !read) {
    return read.error();
  }
  const std::uint64_t follow = file_size - header.data_offset;
  if (header.data_bytes != follow) {
    return npy_error("header says " + header.describe() + " (" + std::to_string(header.data_bytes) +
                     " bytes) but " + std::to_string(follow) + " bytes follow");
  }
  return header;
}

std::string npy_descr(dtype type) {
  if (type == dtype::bfloat16) {
    return "<u2";
  }
  for (const auto& entry : descr_codes) {
    if (entry.type == type && !entry.is_bool) {
      return (size_of(type) == 1 ? "|" : "<") + std::string(entry.code);
    }
  }
  return "|u1";
}

}  // namespace conveyor
