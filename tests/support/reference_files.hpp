#pragma once
/// Files written at test time by the reference libraries of this machine (NumPy, PIL,
/// python3-soundfile) through tests/python/write_*_references.py, run with Debian's python3
/// (CONVEYOR_PYTHON), and the manifests those scripts write beside them.

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

namespace conveyor::testing {

/// Runs tests/python/`script` with `dir` as its argument. Its exit status: 0 when it wrote
/// the files, 77 when a Python module it needs is missing (the test skips), else a failure.
inline int write_references(const std::string& script, const std::filesystem::path& dir) {
  if (std::string(CONVEYOR_PYTHON).empty()) {
    return 77;  // no python3 where CMake looked
  }
  const std::string command = std::string("'") + CONVEYOR_PYTHON + "' '" +
                              CONVEYOR_REFERENCE_SCRIPTS + "/" + script + "' '" + dir.string() +
                              "'";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The lines of a manifest, each split at spaces.
inline std::vector<std::vector<std::string>> read_manifest(const std::filesystem::path& path) {
  std::vector<std::vector<std::string>> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string word; words >> word;) {
      fields.push_back(word);
    }
    if (!fields.empty()) {
      lines.push_back(std::move(fields));
    }
  }
  return lines;
}

}  // namespace conveyor::testing
