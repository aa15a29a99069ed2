#pragma once
/// The parts of the record a sample was read from (core/storage/record_parts.hpp), as the
/// decode steps find them by name.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "conveyor/error.hpp"
#include "core/transforms/sample_state.hpp"

namespace conveyor {

/// A part of a sample's record: a view into sample_state::encoded.
struct part_ref {
  std::string name;
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
};

/// The part `wanted` names (alternatives separated by ';', the first present taken; "": the
/// record's image: its only part, or its first part named like an image). errc::corrupt_shard
/// naming the key for a damaged part container, errc::not_found naming the key, the parts it
/// has and what was wanted when none matches. Views stay valid while `sample.encoded` does.
expected<part_ref> find_sample_part(const sample_state& sample, std::string_view wanted);

/// Whether a part named `name` (its last dot-component) is an image a decode turns into an
/// RGB image: jpg, jpeg, png, bmp, webp, ppm, pgm, tif, tiff.
bool names_image(std::string_view name) noexcept;

}  // namespace conveyor
