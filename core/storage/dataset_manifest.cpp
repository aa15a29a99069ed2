#include "core/storage/dataset_manifest.hpp"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace conveyor {
namespace {

constexpr const char* header_line = "conveyor-dataset 1";

std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

// One parsed line; `where` is "<file>:<line>" for messages.
expected<void> parse_line(const std::string& line, const std::string& where, dataset_manifest& m) {
  std::istringstream in(line);
  std::string kind;
  in >> kind;
  if (kind == "class") {
    std::size_t label = 0;
    std::string name;
    if (!(in >> label >> name) || label != m.class_names.size()) {
      return error{errc::invalid_config,
                   where + ": expected 'class <label> <name>' with labels in order 0, 1, ..."};
    }
    m.class_names.push_back(name);
  } else if (kind == "shard") {
    manifest_shard s;
    std::string hex;
    if (!(in >> s.file >> s.records >> s.bytes >> hex) || hex.size() != 16 ||
        hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return error{errc::invalid_config,
                   where + ": expected 'shard <file> <records> <bytes> <16 hex digits>'"};
    }
    s.index_checksum = std::stoull(hex, nullptr, 16);
    m.shards.push_back(s);
  } else {
    return error{errc::invalid_config, where + ": unknown entry '" + kind + "'"};
  }
  std::string extra;
  if (in >> extra) {
    return error{errc::invalid_config, where + ": unexpected '" + extra + "' at the end"};
  }
  return {};
}

}  // namespace

std::uint64_t dataset_manifest::total_records() const noexcept {
  std::uint64_t n = 0;
  for (const auto& s : shards) {
    n += s.records;
  }
  return n;
}

std::uint64_t dataset_manifest::total_bytes() const noexcept {
  std::uint64_t n = 0;
  for (const auto& s : shards) {
    n += s.bytes;
  }
  return n;
}

expected<void> write_manifest(const std::filesystem::path& dir, const dataset_manifest& m) {
  auto path = dir / manifest_file_name;
  auto partial = path;
  partial += ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    out << header_line << '\n';
    for (std::size_t i = 0; i < m.class_names.size(); ++i) {
      out << "class " << i << ' ' << m.class_names[i] << '\n';
    }
    for (const auto& s : m.shards) {
      out << "shard " << s.file << ' ' << s.records << ' ' << s.bytes << ' '
          << hex16(s.index_checksum) << '\n';
    }
    if (!out.flush()) {
      return error{errc::io_error, partial.string() + ": cannot write the manifest"};
    }
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    return error{errc::io_error, path.string() + ": cannot rename from .partial: " + ec.message()};
  }
  return {};
}

expected<dataset_manifest> parse_manifest(std::istream& in, const std::string& name) {
  std::string line;
  if (!std::getline(in, line) || line != header_line) {
    return error{errc::invalid_config, name + ":1: expected '" + std::string(header_line) + "'"};
  }
  dataset_manifest m;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    auto where = name + ":" + std::to_string(number);
    if (auto ok = parse_line(line, where, m); !ok) {
      return std::move(ok).error();
    }
  }
  if (m.shards.empty()) {
    return error{errc::empty_dataset, name + ": the manifest lists no shards"};
  }
  return m;
}

expected<dataset_manifest> read_manifest(const std::filesystem::path& dir) {
  auto path = dir / manifest_file_name;
  std::ifstream in(path);
  if (!in) {
    return error{errc::not_found,
                 path.string() + ": no dataset manifest (not a sharded dataset directory?)"};
  }
  return parse_manifest(in, path.string());
}

}  // namespace conveyor
