#include "core/remote/aws_profiles.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

namespace conveyor::aws {
namespace {

std::string trim(const std::string& s) {
  auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) {
    return "";
  }
  auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

std::string lower(std::string s) {
  for (auto& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

// The profile a section header names: "[profile x]" in a config file is "x".
std::string profile_of_section(const std::string& inside, bool config_file) {
  auto name = trim(inside);
  if (config_file && name.rfind("profile ", 0) == 0) {
    name = trim(name.substr(8));
  }
  return name;
}

}  // namespace

std::optional<profile_keys> profile_file::find(const std::string& profile) const {
  auto it = profiles.find(profile);
  if (it == profiles.end()) {
    return std::nullopt;
  }
  return it->second;
}

expected<profile_file> parse_profile_file(const std::string& text,
                                          const std::filesystem::path& path, bool config_file) {
  profile_file out{path, {}};
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  profile_keys* section = nullptr;
  while (std::getline(lines, line)) {
    ++number;
    auto bad = [&](const std::string& why) {
      return error{errc::invalid_config,
                   path.string() + " line " + std::to_string(number) + ": " + why};
    };
    auto content = trim(line);
    if (content.empty() || content[0] == '#' || content[0] == ';') {
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(line[0])) != 0) {
      continue;  // a nested block's setting ("s3 =" then indented keys)
    }
    if (content[0] == '[') {
      if (content.back() != ']') {
        return bad("a section header must end with ']'");
      }
      section =
          &out.profiles[profile_of_section(content.substr(1, content.size() - 2), config_file)];
      continue;
    }
    auto eq = content.find('=');
    if (eq == std::string::npos) {
      return bad("expected \"key = value\", a [section], or a comment");
    }
    if (section == nullptr) {
      return bad("a setting before any [section]");
    }
    (*section)[lower(trim(content.substr(0, eq)))] = trim(content.substr(eq + 1));
  }
  return out;
}

expected<std::optional<profile_file>> read_profile_file(const std::filesystem::path& path,
                                                        bool config_file) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return std::optional<profile_file>();
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) {
    return error{errc::io_error, path.string() + ": cannot be read"};
  }
  auto parsed = parse_profile_file(text.str(), path, config_file);
  if (!parsed) {
    return std::move(parsed).error();
  }
  return std::optional<profile_file>(std::move(*parsed));
}

}  // namespace conveyor::aws
