#pragma once
/// WebDataset tar sets written by Python's tarfile (tests/python/make_webdataset.py, run with
/// /usr/bin/python3), and what a reader must find in them: the tars as users make them, not as
/// this project's code would.

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "support/test_support.hpp"

namespace conveyor::testing {

/// A sample of a set, in dataset order, as the script wrote it.
struct python_sample {
  bool readable = true;  ///< false: its read must be refused
  std::string tar;       ///< the tar's file name
  std::string key;
  std::int32_t label = 0;
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> parts;  ///< in tar order
  std::string refusal;  ///< words a refusal must contain
};

struct python_tar_set {
  std::filesystem::path dir;  ///< the tars (and a file that is no tar)
  std::vector<python_sample> samples;
};

/// Writes the set `scenario` ("clean" or "damaged", see the script) under `dir`. A failed
/// expectation when the script fails.
python_tar_set make_python_tars(const temp_dir& dir, const std::string& scenario);

/// A detection set of scripts/make-detection-set: WebDataset tars of jpg + json (boxes,
/// classes) + cls, each object a filled rectangle in its class's colour.
struct detection_set {
  std::filesystem::path dir;
  std::vector<std::array<int, 3>> palette;  ///< class i's colour, RGB
  std::filesystem::path recipe;             ///< config/examples/detection.toml
};

/// Writes `count` samples, `per_tar` to a tar, under `dir`. A failed expectation when the
/// script fails.
detection_set make_detection_set(const temp_dir& dir, int count, int per_tar);

/// A speech set of scripts/make-speech-set (espeak-ng): a LibriSpeech directory and the same
/// utterances as WebDataset tars (KEY.flac + KEY.txt) written with Python's tarfile.
struct speech_set {
  std::filesystem::path dir;   ///< <speaker>/<chapter>/<id>.flac and .trans.txt
  std::filesystem::path tars;  ///< speech-000000.tar, ...
};

/// True when espeak-ng is installed (scripts/install-deps installs it).
bool have_espeak();

/// Writes `count` utterances, `per_tar` to a tar, under `dir`. A failed expectation when the
/// script fails.
speech_set make_speech_set(const temp_dir& dir, int count, int per_tar);

/// Writes the tar `tar` of `members` (member name, file), in order, with Python's tarfile. A
/// failed expectation when the script fails.
void pack_with_python(const temp_dir& dir, const std::filesystem::path& tar,
                      const std::vector<std::pair<std::string, std::filesystem::path>>& members);

/// Cuts the tar `tar` after its last member (its end-of-archive blocks dropped) and appends the
/// header of a member `name` of `size` bytes with none of its data, written by Python's tarfile
/// (a pax header past 8 GiB): a tar cut right after that header, which ends the file.
void cut_after_header(const temp_dir& dir, const std::filesystem::path& tar,
                      const std::string& name, std::uint64_t size);

}  // namespace conveyor::testing
