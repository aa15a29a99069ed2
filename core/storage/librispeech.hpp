#pragma once
/// A LibriSpeech directory as samples (`dataset.format = "librispeech"`), in OpenSLR's layout:
/// <root>/<speaker>/<chapter>/<speaker>-<chapter>-<utterance>.flac, and per chapter
/// <speaker>-<chapter>.trans.txt, lines of "<utterance id> <TRANSCRIPT>". Each audio file
/// (.flac or .wav, anywhere under the root; MLPerf's preprocessing converts to WAV) is a
/// sample of two parts: the file's bytes as they are ("flac" or "wav") and "txt", the text of
/// its transcript line as written (after the id and one space). The key is the utterance id
/// (the file's name without its extension), as a WebDataset tar of the same set names it.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/record.hpp"

namespace conveyor {

struct librispeech_utterance {
  std::string key;
  std::filesystem::path audio;
  std::string audio_part;                 ///< "flac" or "wav"
  std::optional<std::string> transcript;  ///< none: no transcript line names it
};

struct librispeech_set {
  std::vector<librispeech_utterance> utterances;  ///< sorted by key
  std::uint64_t untranscribed =
      0;                      ///< audio files no transcript line names (their samples lack txt)
  std::uint64_t unheard = 0;  ///< transcript lines naming no audio file
};

/// Scans `root` and every directory under it. A symbolic link named as an audio or transcript
/// file is followed only to a regular file inside `root` (contained_file.hpp says why): it is
/// named by its own path (its key, its extension), and its target is read. Errors: invalid_argument
/// naming a link that leads out of `root` and where it leads; not_found for a missing path,
/// io_error for one that is not a directory, cannot be listed, or a transcript file that cannot be
/// read; invalid_argument naming both places for two audio files of one id or two transcript
/// lines of one id, and naming the file and line for a line that does not begin with an id;
/// empty_dataset when there is no audio file.
expected<librispeech_set> scan_librispeech(const std::filesystem::path& root);

/// The multipart record of `u`: its audio file's bytes and, when it has one, its transcript.
/// Errors name the file that cannot be read.
expected<record> read_utterance(const librispeech_utterance& u);

}  // namespace conveyor
