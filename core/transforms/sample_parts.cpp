#include "core/transforms/sample_parts.hpp"

#include <algorithm>
#include <array>

#include "core/storage/file_slice.hpp"
#include "core/storage/record_parts.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

constexpr std::array<std::string_view, 9> image_names{"jpg", "jpeg", "png", "bmp", "webp",
                                                      "ppm", "pgm",  "tif", "tiff"};

// The record's image when the step names none: its only part, else its first image part.
const part_view* image_part(const std::vector<part_view>& parts) {
  if (parts.size() == 1) {
    return &parts.front();
  }
  auto it = std::find_if(parts.begin(), parts.end(),
                         [](const part_view& p) { return names_image(p.name); });
  return it == parts.end() ? nullptr : &*it;
}

std::string names_of(const std::vector<part_view>& parts) {
  std::string out;
  for (const auto& p : parts) {
    out += (out.empty() ? "'" : ", '") + std::string(p.name) + "'";
  }
  return out.empty() ? "none" : out;
}

}  // namespace

bool names_image(std::string_view name) noexcept {
  auto dot = name.find_last_of('.');
  auto ext = dot == std::string_view::npos ? name : name.substr(dot + 1);
  return std::find(image_names.begin(), image_names.end(), ext) != image_names.end();
}

namespace {

// A part found, and whether its reader left it in its file (its bytes are a descriptor).
struct found_part {
  part_ref part;
  bool in_place = false;
};

expected<found_part> find_part_bytes(const sample_state& sample, std::string_view wanted) {
  std::vector<part_view> parts;
  if (sample.multipart) {
    auto parsed = parse_parts(sample.encoded.data(), sample.encoded.size(), sample.key);
    if (!parsed) {
      return std::move(parsed).error();
    }
    parts = std::move(*parsed);
  } else {
    parts.push_back(
        {single_part_view_name(sample.key), sample.encoded.data(), sample.encoded.size()});
  }
  const part_view* found = wanted.empty() ? image_part(parts) : find_part(parts, wanted);
  if (found == nullptr) {
    return error{errc::not_found, sample_location(sample) + " has no part '" +
                                      (wanted.empty() ? "an image" : std::string(wanted)) +
                                      "' (its parts: " + names_of(parts) + ")"};
  }
  const auto index = static_cast<std::uint32_t>(found - parts.data());
  const bool in_place = std::binary_search(sample.in_place.begin(), sample.in_place.end(), index);
  return found_part{part_ref{std::string(found->name), found->data, found->size}, in_place};
}

}  // namespace

expected<part_ref> find_sample_part(const sample_state& sample, std::string_view wanted) {
  auto found = find_part_bytes(sample, wanted);
  if (!found) {
    return std::move(found).error();
  }
  if (found->in_place) {
    return error{errc::invalid_config,
                 sample_location(sample) + ": part '" + found->part.name +
                     "' is left in its file (dataset.map_parts), which only the steps that "
                     "read volumes in place take; remove it from dataset.map_parts"};
  }
  return std::move(found->part);
}

expected<opened_part> open_sample_part(const sample_state& sample, std::string_view wanted) {
  auto found = find_part_bytes(sample, wanted);
  if (!found) {
    return std::move(found).error();
  }
  const auto& part = found->part;
  if (!found->in_place) {
    return opened_part{part.name,
                       make_view_source(part.data, part.size, sample.key + " part " + part.name)};
  }
  auto slice = decode_file_slice(part.data, part.size);
  auto file = slice ? open_file_slice(*slice)
                    : expected<std::shared_ptr<const byte_source>>(std::move(slice).error());
  if (!file) {
    return error{file.error().code(),
                 sample_location(sample) + ", part '" + part.name + "': " + file.error().message()};
  }
  return opened_part{part.name, std::move(*file)};
}

}  // namespace conveyor
