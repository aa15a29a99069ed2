#include "core/storage/part_files.hpp"

#include <algorithm>
#include <map>

#include "core/storage/byte_source.hpp"
#include "core/storage/contained_file.hpp"
#include "core/storage/file_slice.hpp"
#include "core/storage/record_parts.hpp"
#include "core/storage/webdataset_index.hpp"

namespace conveyor {
namespace {

using name_rule = std::optional<member_name> (*)(std::string_view relative);

// MLPerf's "<dir>/<key>_<name>.npy" -> key "<dir>/<key>", part "<name>.npy".
std::optional<member_name> split_npy_pair_name(std::string_view relative) {
  constexpr std::string_view ext = ".npy";
  auto slash = relative.find_last_of('/');
  auto base = slash == std::string_view::npos ? relative : relative.substr(slash + 1);
  if (base.size() <= ext.size() || base.substr(base.size() - ext.size()) != ext) {
    return std::nullopt;
  }
  auto underscore = base.find_last_of('_');
  if (underscore == std::string_view::npos || underscore == 0 ||
      underscore + 1 == base.size() - ext.size()) {
    return std::nullopt;
  }
  auto key_end = relative.size() - base.size() + underscore;
  return member_name{std::string(relative.substr(0, key_end)),
                     std::string(base.substr(underscore + 1))};
}

// Adds `file` to the sample its name (`split`) makes.
expected<void> add_file(std::map<std::string, part_files>& samples,
                        const std::filesystem::path& file, const member_name& split) {
  if (!is_part_name(split.part)) {
    return error{errc::invalid_argument, file.string() + ": the part name \"" + split.part +
                                             "\" is not 1..255 bytes of [A-Za-z0-9._-]"};
  }
  auto& sample = samples[split.key];
  sample.key = split.key;
  for (const auto& [name, other] : sample.parts) {
    if (name == split.part) {
      return error{errc::invalid_argument, file.string() + " and " + other.string() +
                                               " are both part \"" + name + "\" of sample " +
                                               split.key};
    }
  }
  sample.parts.emplace_back(split.part, file);
  return {};
}

expected<part_files_list> scan(const std::filesystem::path& root, name_rule rule,
                               std::string_view expected_names) {
  auto inside = canonical_directory(root);
  if (!inside) {
    return std::move(inside).error();
  }
  std::map<std::string, part_files> samples;
  part_files_list out;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    // Named by where the scan meets it (a link by its own name), read where it is.
    auto split = rule(it->path().lexically_relative(root).generic_string());
    if (!split) {
      std::error_code not_a_file;
      out.skipped += it->is_regular_file(not_a_file) ? 1 : 0;
      continue;
    }
    auto file = contained_file(*it, *inside);
    if (!file) {
      return std::move(file).error();
    }
    if (*file) {
      if (auto ok = add_file(samples, **file, *split); !ok) {
        return std::move(ok).error();
      }
    }
  }
  if (ec) {
    return error{errc::io_error, root.string() + ": cannot list: " + ec.message()};
  }
  if (samples.empty()) {
    return error{errc::empty_dataset,
                 root.string() + ": no " + std::string(expected_names) + " files"};
  }
  for (auto& [key, sample] : samples) {
    std::sort(sample.parts.begin(), sample.parts.end());
    out.samples.push_back(std::move(sample));
  }
  return out;
}

// A descriptor of the whole of `file` (file_slice.hpp).
expected<std::vector<std::uint8_t>> describe_whole_file(const std::filesystem::path& file) {
  auto identity = identify_file(file);
  if (!identity) {
    return std::move(identity).error();
  }
  return encode_file_slice(
      {std::filesystem::absolute(file).string(), 0, identity->size, *identity});
}

}  // namespace

expected<part_files_list> scan_part_files(const std::filesystem::path& root) {
  return scan(root, split_member_name, "key.ext (such as 000.jpg, 000.cls)");
}

expected<part_files_list> scan_npy_pairs(const std::filesystem::path& root) {
  return scan(root, split_npy_pair_name, "<key>_<name>.npy (such as case_00000_x.npy)");
}

expected<record> read_part_files(const part_files& sample, const std::vector<std::string>& mapped) {
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> parts;
  std::vector<std::uint32_t> left;
  for (const auto& [name, file] : sample.parts) {
    bool in_place = std::find(mapped.begin(), mapped.end(), name) != mapped.end();
    auto bytes = in_place ? describe_whole_file(file) : read_whole_file(file);
    if (!bytes) {
      return std::move(bytes).error();
    }
    if (in_place) {
      left.push_back(static_cast<std::uint32_t>(parts.size()));
    }
    parts.emplace_back(name, std::move(*bytes));
  }
  record r{sample.key, 0, encode_parts(parts), true, std::move(left)};
  auto views = parts_of(r);
  if (!views) {
    return std::move(views).error();
  }
  r.label = label_of_parts(*views);
  return r;
}

}  // namespace conveyor
