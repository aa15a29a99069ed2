#pragma once
/// The parts of the record a sample was read from (core/storage/record_parts.hpp), as the
/// decode steps find them by name.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <memory>

#include "conveyor/error.hpp"
#include "core/storage/byte_source.hpp"
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
/// has and what was wanted when none matches, errc::invalid_config naming the part when it was
/// left in its file (dataset.map_parts: only open_sample_part reads those). Views stay valid
/// while `sample.encoded` does.
expected<part_ref> find_sample_part(const sample_state& sample, std::string_view wanted);

/// A part opened for reading in pieces: its bytes in the record, or in its file when its reader
/// left it there (sample_state::in_place names it: the record holds a descriptor of where the
/// bytes lie, core/storage/file_slice.hpp). Bytes of any other part are the part's, whatever
/// they look like.
struct opened_part {
  std::string name;
  /// Offsets relative to the part; named "<file>" or "<key> part <name>" in errors. A view of
  /// sample.encoded for a part in the record: valid while that is.
  std::shared_ptr<const byte_source> bytes;
};

/// The part `wanted` names (as find_sample_part), opened; a descriptor's file is opened now
/// and checked to be the one it was read from. Errors name the sample and the part.
expected<opened_part> open_sample_part(const sample_state& sample, std::string_view wanted);

/// Whether a part named `name` (its last dot-component) is an image a decode turns into an
/// RGB image: jpg, jpeg, png, bmp, webp, ppm, pgm, tif, tiff.
bool names_image(std::string_view name) noexcept;

}  // namespace conveyor
