#include "core/transforms/sample_parts.hpp"

#include "core/transforms/transform_step.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace conveyor {
namespace {

// The last dot-component of `name`, lower-cased.
std::string extension_of(std::string_view name) {
  auto slash = name.find_last_of('/');
  if (slash != std::string_view::npos) {
    name.remove_prefix(slash + 1);
  }
  auto dot = name.find_last_of('.');
  std::string out(dot == std::string_view::npos ? "bin" : name.substr(dot + 1));
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out.empty() ? "bin" : out;
}

bool matches(std::string_view name, std::string_view wanted) {
  std::size_t at = 0;
  while (at <= wanted.size()) {
    auto end = wanted.find(';', at);
    auto one = wanted.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (!one.empty() && one == name) {
      return true;
    }
    if (end == std::string_view::npos) {
      break;
    }
    at = end + 1;
  }
  return false;
}

}  // namespace

bool names_image(std::string_view name) noexcept {
  static constexpr std::array<std::string_view, 9> images{"jpg", "jpeg", "png", "bmp", "webp",
                                                          "ppm", "pgm",  "tif", "tiff"};
  auto dot = name.find_last_of('.');
  auto ext = dot == std::string_view::npos ? name : name.substr(dot + 1);
  return std::find(images.begin(), images.end(), ext) != images.end();
}

expected<part_ref> find_sample_part(const sample_state& sample, std::string_view wanted) {
  // One part: the record's payload, named by its key's extension.
  part_ref only{extension_of(sample.key), sample.encoded.data(), sample.encoded.size()};
  if (sample.multipart) {
    return error{errc::corrupt_shard,
                 sample_location(sample) + ": records of several parts are not read yet"};
  }
  if (wanted.empty() || matches(only.name, wanted)) {
    return only;
  }
  return error{errc::not_found, sample_location(sample) + " has no part '" + std::string(wanted) +
                                    "' (its part: '" + only.name + "')"};
}

}  // namespace conveyor
