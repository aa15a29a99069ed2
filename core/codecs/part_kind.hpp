#pragma once
/// Which decoder a record's part takes, from the part's name: WebDataset names a sample's
/// parts by extension ("jpg", "seg.png", "x.npy"), and the last dot-separated component
/// decides, case-insensitively (as webdataset/autodecode.py reads them).

#include <string_view>

#include "conveyor/error.hpp"

namespace conveyor {

enum class part_kind {
  jpeg,   ///< jpg jpeg jpe jfif: the JPEG paths of jpeg_decoder.hpp (not decoded here)
  png,    ///< png: png_decoder.hpp
  npy,    ///< npy: npy_decoder.hpp
  audio,  ///< wav flac ogg oga opus mp3 aiff aif au: audio_decoder.hpp
  cls,    ///< cls cls2 index inx id: cls_decoder.hpp
  txt,    ///< txt text transcript: txt_decoder.hpp
  json,   ///< json jsn: json_decoder.hpp
};

/// "jpeg", "png", "npy", "audio", "cls", "txt", "json".
std::string_view name_of(part_kind kind) noexcept;

/// The kind of a part named `name` ("jpg", "seg.PNG", "x.npy"). errc::not_found names the
/// extension when Conveyor has no decoder for it. Thread-safe (pure).
expected<part_kind> decoder_for_extension(std::string_view name);

}  // namespace conveyor
