#include "core/codecs/json_decoder.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include <opencv2/core/cvdef.h>
#include <nlohmann/json.hpp>

namespace conveyor {

struct json_document::value {
  nlohmann::json json;
};

namespace {

using json = nlohmann::json;

/// The shape the numbers at a key path are written into.
struct array_shape {
  int rank = 0;
  host_array::shape_type shape{};
};

/// Where a value is: the key path and the indices below it, named only when a message needs it.
struct value_place {
  std::string_view key_path;
  std::array<std::size_t, host_array::max_rank> index{};
  int depth = 0;

  std::string name() const {
    std::string out = key_path.empty() ? "json document" : "json '" + std::string(key_path) + "'";
    for (int i = 0; i < depth; ++i) {
      out += "[" + std::to_string(index[static_cast<std::size_t>(i)]) + "]";
    }
    return out;
  }
};

/// A value, cut short, for a message.
std::string shown(const json& v) {
  constexpr std::size_t max_shown = 40;
  std::string text = v.dump();
  return text.size() > max_shown ? text.substr(0, max_shown) + "..." : text;
}

error decode_failure(const value_place& place, const std::string& why) {
  return error(errc::decode_error, place.name() + ": " + why);
}

/// The value that `key_path` names.
expected<const json*> find_value(const json& root, std::string_view key_path) {
  const json* node = &root;
  std::size_t start = 0;
  while (!key_path.empty() && start <= key_path.size()) {
    const std::size_t end = std::min(key_path.find('.', start), key_path.size());
    const std::string key(key_path.substr(start, end - start));
    const std::string walked = "json '" + std::string(key_path.substr(0, end)) + "'";
    std::size_t index = 0;
    auto [stop, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
    const bool is_index = ec == std::errc() && stop == key.data() + key.size();
    if (auto it = node->is_object() ? node->find(key) : node->end(); it != node->end()) {
      node = &*it;
    } else if (node->is_array() && is_index && index < node->size()) {
      node = &(*node)[index];
    } else {
      return error(errc::not_found, walked + ": no such key or index");
    }
    start = end + 1;
  }
  return node;
}

/// "[3, 4]".
template <class It>
std::string extents_text(It first, It last) {
  std::string out = "[";
  for (auto it = first; it != last; ++it) {
    out += (it == first ? "" : ", ") + std::to_string(*it);
  }
  return out + "]";
}

/// The shape of `value` from its first elements, with the caller's inner extents.
expected<array_shape> shape_of(const json& value, const value_place& place,
                               const std::vector<std::int64_t>& inner_shape) {
  array_shape found;
  for (const json* node = &value; node->is_array(); node = &node->front()) {
    if (found.rank == host_array::max_rank) {
      return decode_failure(place,
                            "arrays nest deeper than rank " + std::to_string(host_array::max_rank));
    }
    found.shape[static_cast<std::size_t>(found.rank++)] = static_cast<std::int64_t>(node->size());
    if (node->empty()) {
      break;
    }
  }
  if (inner_shape.empty()) {
    return found;
  }
  if (found.rank == 1 && found.shape[0] == 0) {
    std::copy(inner_shape.begin(), inner_shape.end(), found.shape.begin() + 1);
    found.rank += static_cast<int>(inner_shape.size());
    return found;
  }
  const bool same = found.rank == 1 + static_cast<int>(inner_shape.size()) &&
                    std::equal(inner_shape.begin(), inner_shape.end(), found.shape.begin() + 1);
  if (!same) {
    const auto first = found.shape.cbegin() + std::min(found.rank, 1);
    return decode_failure(
        place, "inner extents " + extents_text(first, found.shape.cbegin() + found.rank) +
                   " where " + extents_text(inner_shape.begin(), inner_shape.end()) +
                   " were asked for");
  }
  return found;
}

/// `v` as an integer of type T, if it is one in T's range.
template <class T>
expected<T> integer_value(const json& v, const value_place& place, dtype type) {
  constexpr auto lo = std::numeric_limits<T>::min();
  constexpr auto hi = std::numeric_limits<T>::max();
  const auto outside = decode_failure(
      place, shown(v) + " is not an integer in " + std::string(name_of(type)) + "'s range");
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    return u <= static_cast<std::uint64_t>(hi) ? expected<T>(static_cast<T>(u)) : outside;
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    return i >= lo && i <= hi ? expected<T>(static_cast<T>(i)) : outside;
  }
  const double d = v.get<double>();
  // T's range is [lo, 2^digits): both bounds are exact as doubles, unlike hi for int64.
  const double end = std::ldexp(1.0, std::numeric_limits<T>::digits);
  if (!(std::floor(d) == d && d >= static_cast<double>(lo) && d < end)) {
    return outside;
  }
  return static_cast<T>(d);
}

/// Writes number `v` (is_number()) as one element of `type` at `out`.
expected<void> store_number(const json& v, const value_place& place, dtype type,
                            std::uint8_t* out) {
  auto store = [out](auto x) -> expected<void> {
    std::memcpy(out, &x, sizeof x);
    return {};
  };
  auto stored = [&store](const auto& x) -> expected<void> {
    return x ? store(*x) : expected<void>(x.error());
  };
  switch (type) {
    case dtype::uint8:
      return stored(integer_value<std::uint8_t>(v, place, type));
    case dtype::int16:
      return stored(integer_value<std::int16_t>(v, place, type));
    case dtype::int32:
      return stored(integer_value<std::int32_t>(v, place, type));
    case dtype::int64:
      return stored(integer_value<std::int64_t>(v, place, type));
    case dtype::int8:
      return stored(integer_value<std::int8_t>(v, place, type));
    case dtype::float64: {
      const auto d = v.get<double>();
      if (!std::isfinite(d)) {
        return decode_failure(place, shown(v) + " is outside float64");
      }
      return store(d);
    }
    case dtype::float32:
    case dtype::float16: {
      const auto f = static_cast<float>(v.get<double>());
      const cv::float16_t h(f);
      if (!std::isfinite(type == dtype::float32 ? f : static_cast<float>(h))) {
        return decode_failure(place, shown(v) + " is outside " + std::string(name_of(type)));
      }
      return type == dtype::float32 ? store(f) : store(h.bits());
    }
    case dtype::bfloat16:
    case dtype::bool_:
      break;
  }
  return error(errc::invalid_argument, "json: no conversion to " + std::string(name_of(type)));
}

/// Checks that `v` has `shape` from axis place.depth on, with a number at every leaf, and
/// writes the numbers at `out` (advancing it) unless `out` is null (a check only).
expected<void> fill(const json& v, const array_shape& shape, dtype type, value_place& place,
                    std::uint8_t*& out) {
  if (place.depth == shape.rank) {
    if (!v.is_number()) {
      return decode_failure(place, shown(v) + " is not a number");
    }
    if (out == nullptr) {
      return {};
    }
    if (auto stored = store_number(v, place, type, out); !stored) {
      return stored;
    }
    out += size_of(type);
    return {};
  }
  const auto extent = static_cast<std::size_t>(shape.shape[static_cast<std::size_t>(place.depth)]);
  if (!v.is_array() || v.size() != extent) {
    return decode_failure(place, shown(v) + " is not an array of " + std::to_string(extent) +
                                     " like the first one (a ragged array?)");
  }
  ++place.depth;
  for (std::size_t i = 0; i < extent; ++i) {
    place.index[static_cast<std::size_t>(place.depth - 1)] = i;
    if (auto filled = fill(v[i], shape, type, place, out); !filled) {
      return filled;
    }
  }
  --place.depth;
  return {};
}

expected<void> check_request(dtype type, const std::vector<std::int64_t>& inner_shape) {
  if (type == dtype::bfloat16 || type == dtype::bool_) {
    return error(errc::invalid_argument, "json: " + std::string(name_of(type)) +
                                             " is not read from JSON (ask float32 or uint8)");
  }
  const bool negative =
      std::any_of(inner_shape.begin(), inner_shape.end(), [](std::int64_t e) { return e < 0; });
  if (inner_shape.size() >= host_array::max_rank || negative) {
    return error(errc::invalid_argument, "json: inner_shape must be at most " +
                                             std::to_string(host_array::max_rank - 1) +
                                             " extents >= 0");
  }
  return {};
}

}  // namespace

json_document::json_document(std::unique_ptr<value> root) : root_(std::move(root)) {}
json_document::json_document(json_document&&) noexcept = default;
json_document& json_document::operator=(json_document&&) noexcept = default;
json_document::~json_document() = default;

expected<json_document> json_document::parse(const std::uint8_t* data, std::size_t size,
                                             const json_limits& limits) {
  if (size > limits.max_bytes) {
    return error(errc::decode_error, "json: " + std::to_string(size) + " bytes, more than " +
                                         std::to_string(limits.max_bytes));
  }
  bool too_deep = false;
  // Containers deeper than the limit are discarded as they are read (so never stored), and
  // the document refused after.
  json::parser_callback_t keep = [&](int depth, json::parse_event_t event, json& /*parsed*/) {
    const bool opens =
        event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
    too_deep = too_deep || (opens && depth >= limits.max_depth);
    return !(opens && depth >= limits.max_depth);
  };
  auto root = std::make_unique<value>();
  try {
    root->json = json::parse(data, data + size, keep);
  } catch (const json::exception& e) {
    return error(errc::decode_error, std::string("json: ") + e.what());
  }
  if (too_deep) {
    return error(errc::decode_error,
                 "json: nested deeper than " + std::to_string(limits.max_depth) + " levels");
  }
  return json_document(std::move(root));
}

expected<host_array> json_array(const json_document& document, std::string_view key_path,
                                dtype type, const std::vector<std::int64_t>& inner_shape) {
  if (auto checked = check_request(type, inner_shape); !checked) {
    return checked.error();
  }
  auto found = find_value(document.root().json, key_path);
  if (!found) {
    return found.error();
  }
  value_place place{key_path};
  auto shape = shape_of(**found, place, inner_shape);
  if (!shape) {
    return shape.error();
  }
  // The shape comes from the first elements alone: check every element against it before
  // allocating, or a document of a few thousand numbers could ask for 1000^4 of them.
  std::uint8_t* check_only = nullptr;
  if (auto checked = fill(**found, *shape, type, place, check_only); !checked) {
    return checked.error();
  }
  auto out =
      host_array::uninitialized(type, shape->shape.begin(), shape->shape.begin() + shape->rank);
  std::uint8_t* cursor = out.bytes.data();
  if (auto filled = fill(**found, *shape, type, place, cursor); !filled) {
    return filled.error();
  }
  return out;
}

expected<host_array> json_to_array(const std::uint8_t* data, std::size_t size,
                                   std::string_view key_path, dtype type,
                                   const std::vector<std::int64_t>& inner_shape,
                                   const json_limits& limits) {
  auto document = json_document::parse(data, size, limits);
  if (!document) {
    return document.error();
  }
  return json_array(*document, key_path, type, inner_shape);
}

}  // namespace conveyor
