#include "support/python_tars.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/app_process.hpp"

namespace conveyor::testing {
namespace {

std::vector<std::uint8_t> from_hex(const std::string& hex) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<std::uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  for (std::string field; std::getline(in, field, '\t');) {
    fields.push_back(field);
  }
  return fields;
}

python_sample parse_line(const std::string& line) {
  auto fields = split_tabs(line);
  EXPECT_GE(fields.size(), 4u) << line;
  python_sample s;
  s.readable = fields[0] == "ok";
  s.tar = fields[1];
  s.key = fields[2];
  if (!s.readable) {
    s.refusal = fields[3];
    return s;
  }
  s.label = std::stoi(fields[3]);
  for (std::size_t i = 4; i < fields.size(); ++i) {
    auto equals = fields[i].find('=');
    s.parts.emplace_back(fields[i].substr(0, equals), from_hex(fields[i].substr(equals + 1)));
  }
  return s;
}

}  // namespace

python_tar_set make_python_tars(const temp_dir& dir, const std::string& scenario) {
  python_tar_set set{dir / scenario, {}};
  auto run = run_app(CONVEYOR_PYTHON, dir,
                     std::string(CONVEYOR_SOURCE_DIR) + "/tests/python/make_webdataset.py " +
                         scenario + " " + set.dir.string());
  EXPECT_EQ(run.exit_code, 0) << run.err;
  std::ifstream in(set.dir / "expected.txt");
  for (std::string line; std::getline(in, line);) {
    set.samples.push_back(parse_line(line));
  }
  EXPECT_FALSE(set.samples.empty()) << "the script wrote no samples";
  return set;
}

void pack_with_python(const temp_dir& dir, const std::filesystem::path& tar,
                      const std::vector<std::pair<std::string, std::filesystem::path>>& members) {
  std::string args =
      std::string(CONVEYOR_SOURCE_DIR) + "/tests/python/make_webdataset.py pack " + tar.string();
  for (const auto& [name, file] : members) {
    args += " " + name + " " + file.string();
  }
  auto run = run_app(CONVEYOR_PYTHON, dir, args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

void cut_after_header(const temp_dir& dir, const std::filesystem::path& tar,
                      const std::string& name, std::uint64_t size) {
  auto run = run_app(CONVEYOR_PYTHON, dir,
                     std::string(CONVEYOR_SOURCE_DIR) + "/tests/python/make_webdataset.py cut " +
                         tar.string() + " " + name + " " + std::to_string(size));
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

detection_set make_detection_set(const temp_dir& dir, int count, int per_tar) {
  const std::string source = CONVEYOR_SOURCE_DIR;
  detection_set set{dir / "detection", {}, source + "/config/examples/detection.toml"};
  auto run = run_app(CONVEYOR_PYTHON, dir,
                     source + "/scripts/make-detection-set " + std::to_string(count) + " " +
                         set.dir.string() + " --per-tar " + std::to_string(per_tar));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  std::ifstream in(set.dir / "palette.txt");
  for (std::array<int, 3> rgb{}; in >> rgb[0] >> rgb[1] >> rgb[2];) {
    set.palette.push_back(rgb);
  }
  EXPECT_FALSE(set.palette.empty());
  return set;
}

bool have_espeak() {
  return std::system("command -v espeak-ng > /dev/null 2>&1") == 0;
}

speech_set make_speech_set(const temp_dir& dir, int count, int per_tar) {
  speech_set set{dir / "speech", dir / "speech-tars"};
  auto run = run_app(CONVEYOR_PYTHON, dir,
                     std::string(CONVEYOR_SOURCE_DIR) + "/scripts/make-speech-set " +
                         std::to_string(count) + " " + set.dir.string() + " --webdataset " +
                         set.tars.string() + " --per-tar " + std::to_string(per_tar));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return set;
}

}  // namespace conveyor::testing
