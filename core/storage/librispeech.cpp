#include "core/storage/librispeech.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "core/storage/byte_source.hpp"
#include "core/storage/contained_file.hpp"
#include "core/storage/record_parts.hpp"

namespace conveyor {
namespace {

constexpr std::string_view transcript_suffix = ".trans.txt";
/// A transcript file larger than this is not LibriSpeech's (its largest are ~20 KB).
constexpr std::uintmax_t max_transcript_file = std::uintmax_t{16} << 20;

struct transcript_line {
  std::string text;
  std::string where;  ///< "<file>:<line>"
};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/// The audio part an extension names ("flac", "wav"), or "" for another file.
std::string audio_part_of(const std::filesystem::path& file) {
  auto ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".flac" || ext == ".wav" ? ext.substr(1) : std::string();
}

/// The "<id> <text>" lines of a transcript file, into `lines` by id.
expected<void> read_transcripts(const std::filesystem::path& file,
                                std::map<std::string, transcript_line>& lines) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  if (ec || size > max_transcript_file) {
    return error{errc::io_error, file.string() + (ec ? ": cannot be read: " + ec.message()
                                                     : ": over 16 MiB, not a transcript file")};
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return error{errc::io_error, file.string() + ": cannot be read"};
  }
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (line.empty()) {
      continue;
    }
    const auto space = line.find(' ');
    const std::string id = line.substr(0, space);
    const std::string where = file.string() + ":" + std::to_string(number);
    if (id.empty()) {
      return error{errc::invalid_argument, where +
                                               ": a transcript line begins with its "
                                               "utterance id, not a space"};
    }
    auto [at, fresh] = lines.emplace(
        id, transcript_line{space == std::string::npos ? std::string() : line.substr(space + 1),
                            where});
    if (!fresh) {
      return error{errc::invalid_argument,
                   where + " and " + at->second.where + " both transcribe utterance " + id};
    }
  }
  return {};
}

/// What a scan has met so far.
struct scanned {
  std::map<std::string, librispeech_utterance> audio;
  std::map<std::string, transcript_line> lines;
};

/// Adds `entry`, an entry under the set's directory `inside` (canonical), to what was met: an
/// audio file or a transcript file by its name (a link by its own name), read where it is.
expected<void> add_entry(const std::filesystem::directory_entry& entry,
                         const std::filesystem::path& inside, scanned& met) {
  const auto& name = entry.path();
  const bool transcript = ends_with(name.filename().string(), transcript_suffix);
  auto part = transcript ? std::string() : audio_part_of(name);
  if (!transcript && part.empty()) {
    return {};
  }
  auto contained = contained_file(entry, inside);
  if (!contained) {
    return std::move(contained).error();
  }
  if (!*contained) {
    return {};  // not a regular file
  }
  const auto& file = **contained;
  if (transcript) {
    return read_transcripts(file, met.lines);
  }
  auto key = name.stem().string();
  auto [at, fresh] = met.audio.emplace(key, librispeech_utterance{key, file, part, std::nullopt});
  if (!fresh) {
    return error{errc::invalid_argument, file.string() + " and " + at->second.audio.string() +
                                             " are both utterance " + key};
  }
  return {};
}

}  // namespace

expected<librispeech_set> scan_librispeech(const std::filesystem::path& root) {
  auto inside = canonical_directory(root);
  if (!inside) {
    return std::move(inside).error();
  }
  scanned met;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (auto ok = add_entry(*it, *inside, met); !ok) {
      return std::move(ok).error();
    }
  }
  if (ec) {
    return error{errc::io_error, root.string() + ": cannot list: " + ec.message()};
  }
  if (met.audio.empty()) {
    return error{errc::empty_dataset, root.string() + ": no .flac or .wav files"};
  }
  librispeech_set out;
  for (auto& [key, u] : met.audio) {
    if (auto line = met.lines.find(key); line != met.lines.end()) {
      u.transcript = std::move(line->second.text);
      met.lines.erase(line);
    } else {
      ++out.untranscribed;
    }
    out.utterances.push_back(std::move(u));
  }
  out.unheard = met.lines.size();
  return out;
}

expected<record> read_utterance(const librispeech_utterance& u) {
  auto bytes = read_whole_file(u.audio);
  if (!bytes) {
    return std::move(bytes).error();
  }
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> parts;
  parts.emplace_back(u.audio_part, std::move(*bytes));
  if (u.transcript) {
    parts.emplace_back("txt",
                       std::vector<std::uint8_t>(u.transcript->begin(), u.transcript->end()));
  }
  return record{u.key, 0, encode_parts(parts), true};
}

}  // namespace conveyor
