#pragma once
/// The AWS shared files, as the AWS CLI and SDKs read them: ~/.aws/credentials (sections
/// "[name]") and ~/.aws/config (sections "[default]" and "[profile name]"), both INI files of
/// "key = value" lines; '#' and ';' start comments; indented lines (a nested block such as
/// "s3 =" followed by its settings) are skipped. Pure parsing: thread-safe.

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "conveyor/error.hpp"

namespace conveyor::aws {

/// One profile's keys (lowercased names) and values.
using profile_keys = std::map<std::string, std::string>;

/// The profiles of one file, by profile name ("default", or "name" of "[profile name]").
struct profile_file {
  std::filesystem::path path;
  std::map<std::string, profile_keys> profiles;
  /// The keys of `profile`; nullopt when the file has no such profile.
  std::optional<profile_keys> find(const std::string& profile) const;
};

/// Parses `text`, the contents of `path`; `config_file` reads "[profile name]" sections as
/// "name" (the config file's form). invalid_config naming the file and line for a line that is
/// neither a section, a "key = value", a comment nor blank.
expected<profile_file> parse_profile_file(const std::string& text,
                                          const std::filesystem::path& path, bool config_file);

/// Reads and parses the file at `path`: nullopt when it does not exist; io_error naming it when
/// it cannot be read.
expected<std::optional<profile_file>> read_profile_file(const std::filesystem::path& path,
                                                        bool config_file);

}  // namespace conveyor::aws
