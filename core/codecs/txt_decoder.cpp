#include "core/codecs/txt_decoder.hpp"

#include <algorithm>

#include <utf8.h>

namespace conveyor {

expected<void> check_utf8(const std::uint8_t* data, std::size_t size) {
  const std::uint8_t* end = data + size;
  const std::uint8_t* bad = utf8::find_invalid(data, end);
  if (bad != end) {
    return error(errc::decode_error, "txt: not UTF-8: the sequence at byte " +
                                         std::to_string(bad - data) + " of " +
                                         std::to_string(size) + " is malformed");
  }
  return {};
}

expected<host_array> decode_txt(const std::uint8_t* data, std::size_t size, bool require_utf8) {
  if (require_utf8) {
    if (auto checked = check_utf8(data, size); !checked) {
      return checked.error();
    }
  }
  auto out = host_array::uninitialized(dtype::uint8, {static_cast<std::int64_t>(size)});
  std::copy(data, data + size, out.bytes.begin());
  return out;
}

}  // namespace conveyor
