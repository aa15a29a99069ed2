#include "core/storage/part_files.hpp"

#include <algorithm>
#include <map>

#include "core/storage/byte_source.hpp"
#include "core/storage/record_parts.hpp"
#include "core/storage/require_directory.hpp"
#include "core/storage/webdataset_index.hpp"

namespace conveyor {
namespace {

// Adds `file` (at `relative` under the root) to the sample its key names.
expected<void> add_file(std::map<std::string, part_files>& samples,
                        const std::filesystem::path& file, const std::string& relative,
                        std::uint64_t& skipped) {
  auto split = split_member_name(relative);
  if (!split) {
    ++skipped;
    return {};
  }
  if (!is_part_name(split->part)) {
    return error{errc::invalid_argument, file.string() + ": the part name \"" + split->part +
                                             "\" is not 1..255 bytes of [A-Za-z0-9._-]"};
  }
  auto& sample = samples[split->key];
  sample.key = split->key;
  for (const auto& [name, other] : sample.parts) {
    if (name == split->part) {
      return error{errc::invalid_argument, file.string() + " and " + other.string() +
                                               " are both part \"" + name + "\" of sample " +
                                               split->key};
    }
  }
  sample.parts.emplace_back(split->part, file);
  return {};
}

}  // namespace

expected<part_files_list> scan_part_files(const std::filesystem::path& root) {
  if (auto ok = require_directory(root); !ok) {
    return std::move(ok).error();
  }
  std::map<std::string, part_files> samples;
  part_files_list out;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) {
      continue;
    }
    auto relative = it->path().lexically_relative(root).generic_string();
    if (auto ok = add_file(samples, it->path(), relative, out.skipped); !ok) {
      return std::move(ok).error();
    }
  }
  if (ec) {
    return error{errc::io_error, root.string() + ": cannot list: " + ec.message()};
  }
  if (samples.empty()) {
    return error{errc::empty_dataset,
                 root.string() + ": no key.ext files (expected files such as 000.jpg, 000.cls)"};
  }
  for (auto& [key, sample] : samples) {
    std::sort(sample.parts.begin(), sample.parts.end());
    out.samples.push_back(std::move(sample));
  }
  return out;
}

expected<record> read_part_files(const part_files& sample) {
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> parts;
  for (const auto& [name, file] : sample.parts) {
    auto bytes = read_whole_file(file);
    if (!bytes) {
      return std::move(bytes).error();
    }
    parts.emplace_back(name, std::move(*bytes));
  }
  record r{sample.key, 0, encode_parts(parts), true};
  auto views = parts_of(r);
  if (!views) {
    return std::move(views).error();
  }
  r.label = label_of_parts(*views);
  return r;
}

}  // namespace conveyor
