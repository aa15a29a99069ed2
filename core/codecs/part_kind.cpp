#include "core/codecs/part_kind.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace conveyor {
namespace {

struct extension_kind {
  std::string_view extension;
  part_kind kind;
};

// The extensions webdataset/autodecode.py gives these decoders (its basichandlers, image and
// torchaudio handlers), less those Conveyor has no decoder for, plus what libsndfile reads.
constexpr extension_kind extension_kinds[] = {
    {"jpg", part_kind::jpeg},   {"jpeg", part_kind::jpeg},      {"jpe", part_kind::jpeg},
    {"jfif", part_kind::jpeg},  {"png", part_kind::png},        {"npy", part_kind::npy},
    {"wav", part_kind::audio},  {"flac", part_kind::audio},     {"ogg", part_kind::audio},
    {"oga", part_kind::audio},  {"opus", part_kind::audio},     {"mp3", part_kind::audio},
    {"aiff", part_kind::audio}, {"aif", part_kind::audio},      {"au", part_kind::audio},
    {"cls", part_kind::cls},    {"cls2", part_kind::cls},       {"index", part_kind::cls},
    {"inx", part_kind::cls},    {"id", part_kind::cls},         {"txt", part_kind::txt},
    {"text", part_kind::txt},   {"transcript", part_kind::txt}, {"json", part_kind::json},
    {"jsn", part_kind::json},
};

bool same_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string_view name_of(part_kind kind) noexcept {
  switch (kind) {
    case part_kind::jpeg:
      return "jpeg";
    case part_kind::png:
      return "png";
    case part_kind::npy:
      return "npy";
    case part_kind::audio:
      return "audio";
    case part_kind::cls:
      return "cls";
    case part_kind::txt:
      return "txt";
    case part_kind::json:
      return "json";
  }
  return "unknown";
}

expected<part_kind> decoder_for_extension(std::string_view name) {
  const auto dot = name.rfind('.');
  const std::string_view extension = dot == std::string_view::npos ? name : name.substr(dot + 1);
  for (const auto& entry : extension_kinds) {
    if (same_ignoring_case(entry.extension, extension)) {
      return entry.kind;
    }
  }
  return error(errc::not_found, "no decoder for part '" + std::string(name) + "' (extension '" +
                                    std::string(extension) + "')");
}

}  // namespace conveyor
