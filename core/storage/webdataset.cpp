#include "core/storage/webdataset.hpp"

#include <algorithm>

#include "core/base/log.hpp"
#include "core/base/memory_bound.hpp"
#include "core/storage/record_parts.hpp"

namespace conveyor {
namespace {

// What the part table of sample `id` names: its parts' names and sizes, in order.
std::vector<std::pair<std::string_view, std::uint64_t>> table_of(const webdataset_index& index,
                                                                 std::uint64_t id) {
  std::vector<std::pair<std::string_view, std::uint64_t>> table;
  const auto* p = index.parts_begin(id);
  for (std::uint32_t i = 0; i < index.at(id).part_count; ++i, ++p) {
    table.emplace_back(index.part_name(*p), p->size);
  }
  return table;
}

void report_problems(const webdataset_index& index) {
  if (index.refused_samples() > 0) {
    log("webdataset")
        ->warn(
            "{} of {} samples are damaged or have duplicate keys: each read of them fails, "
            "naming the tar, key and reason (the pipeline quarantines them)",
            index.refused_samples(), index.size());
  }
  if (index.skipped_members() > 0) {
    log("webdataset")
        ->info("{} tar members skipped: directories, links, or names without an extension",
               index.skipped_members());
  }
}

}  // namespace

expected<std::vector<std::filesystem::path>> list_tar_files(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return error{errc::not_found, path.string() + ": no such file or directory"};
  }
  if (!std::filesystem::is_directory(path, ec)) {
    return std::vector<std::filesystem::path>{path};
  }
  std::vector<std::filesystem::path> tars;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    if (entry.is_regular_file(ec) && entry.path().extension() == ".tar") {
      tars.push_back(entry.path());
    }
  }
  if (ec) {
    return error{errc::io_error, path.string() + ": cannot list: " + ec.message()};
  }
  std::sort(tars.begin(), tars.end(),
            [](const auto& a, const auto& b) { return a.filename() < b.filename(); });
  return tars;
}

expected<webdataset> webdataset::open(const std::filesystem::path& path) {
  auto files = list_tar_files(path);
  if (!files) {
    return std::move(files).error();
  }
  if (files->empty()) {
    return error{errc::empty_dataset, path.string() + ": no .tar files"};
  }
  std::vector<std::shared_ptr<const byte_source>> tars;
  for (const auto& file : *files) {
    auto source = open_file_source(file);
    if (!source) {
      return std::move(source).error();
    }
    tars.push_back(std::move(*source));
  }
  return open(std::move(tars));
}

expected<webdataset> webdataset::open(std::vector<std::shared_ptr<const byte_source>> tars) {
  if (tars.empty()) {
    return error{errc::empty_dataset, "a WebDataset of no tars"};
  }
  webdataset_index index;
  for (const auto& tar : tars) {
    auto listing = list_tar(*tar);
    if (!listing) {
      return std::move(listing).error();
    }
    index.add_tar(tar->name(), *listing);
  }
  index.finish();
  if (index.size() == 0) {
    return error{errc::empty_dataset, tars.front()->name() + " (and the " +
                                          std::to_string(tars.size() - 1) +
                                          " tars after it): no samples"};
  }
  report_problems(index);
  return webdataset(std::move(tars), std::move(index));
}

webdataset::webdataset(std::vector<std::shared_ptr<const byte_source>> tars, webdataset_index index)
    : tars_(std::move(tars)), index_(std::move(index)) {}

expected<void> webdataset::keep_in_place(std::vector<std::string> names) {
  std::vector<file_identity> identities;
  for (const auto& tar : tars_) {
    auto identity = identify_file(tar->name());
    if (!identity) {
      return std::move(identity).error();
    }
    identities.push_back(*identity);
  }
  in_place_ = std::move(names);
  tar_identities_ = std::move(identities);
  return {};
}

expected<record> webdataset::read_in_place(std::uint64_t id) const {
  const auto tar = index_.at(id).tar;
  const auto path = std::filesystem::absolute(tars_[tar]->name()).string();
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> parts;
  std::vector<std::uint32_t> left;
  const auto* p = index_.parts_begin(id);
  for (std::uint32_t i = 0; i < index_.at(id).part_count; ++i, ++p) {
    std::string name(index_.part_name(*p));
    if (std::find(in_place_.begin(), in_place_.end(), name) != in_place_.end()) {
      parts.emplace_back(name, encode_file_slice({path, p->offset, p->size, tar_identities_[tar]}));
      left.push_back(i);
      continue;
    }
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(p->size));
    if (auto ok = read_part(id, *p, bytes.data()); !ok) {
      return std::move(ok).error();
    }
    parts.emplace_back(std::move(name), std::move(bytes));
  }
  record r{index_.at(id).key, 0, encode_parts(parts), true, std::move(left)};
  auto views = parts_of(r);
  if (!views) {
    return std::move(views).error();
  }
  r.label = label_of_parts(*views);
  return r;
}

std::vector<std::filesystem::path> webdataset::files() const {
  std::vector<std::filesystem::path> out;
  for (const auto& tar : tars_) {
    out.emplace_back(tar->name());
  }
  return out;
}

std::string webdataset::locate(std::uint64_t id) const {
  const auto& s = index_.at(id);
  return index_.tar_name(s.tar) + " key " + s.key;
}

std::uint64_t webdataset::payload_size(std::uint64_t id) const {
  std::uint64_t bytes = 4;  // the part count
  for (const auto& [name, size] : table_of(index_, id)) {
    bytes += 2 + name.size() + 8 + size;
  }
  return bytes;
}

error webdataset::refused(std::uint64_t id, errc code, const std::string& why) const {
  return error{code, locate(id) + ": " + why};
}

expected<void> webdataset::read_part(std::uint64_t id, const webdataset_index::part& p,
                                     std::uint8_t* out) const {
  const auto& tar = *tars_[index_.at(id).tar];
  if (auto ok = tar.read_at(p.offset, out, static_cast<std::size_t>(p.size)); !ok) {
    return refused(id, ok.error().code(),
                   "part " + std::string(index_.part_name(p)) + ": " + ok.error().message());
  }
  return {};
}

expected<record> webdataset::read(std::uint64_t id) const {
  if (id >= size()) {
    return error{errc::not_found, "sample " + std::to_string(id) + " is out of range (" +
                                      std::to_string(size()) + " samples)"};
  }
  if (const auto* why = index_.problem(id)) {
    return refused(id, errc::corrupt_shard, *why);
  }
  if (!in_place_.empty()) {
    return read_in_place(id);
  }
  // The parts' sizes come from the tar's headers (or a store's listing of it): bounded before a
  // buffer is sized by them.
  if (auto fits = fits_in_memory(payload_size(id), "its parts"); !fits) {
    return refused(id, errc::io_error, fits.error().message());
  }
  record r{index_.at(id).key, 0, encode_part_table(table_of(index_, id)), true};
  auto at = r.payload.size();
  r.payload.resize(payload_size(id));
  const auto* p = index_.parts_begin(id);
  for (std::uint32_t i = 0; i < index_.at(id).part_count; ++i, ++p) {
    if (auto ok = read_part(id, *p, r.payload.data() + at); !ok) {
      return std::move(ok).error();
    }
    at += p->size;
  }
  auto parts = parts_of(r);
  if (!parts) {
    return std::move(parts).error();
  }
  r.label = label_of_parts(*parts);
  return r;
}

expected<void> webdataset::check(std::uint64_t id, const record& got) const {
  if (id >= size() || index_.problem(id) != nullptr) {
    return read(id).error();  // fails: out of range, or refused
  }
  auto differs = [&](const std::string& what) {
    return refused(id, errc::checksum_mismatch, what);
  };
  if (got.key != index_.at(id).key) {
    return differs("key \"" + got.key + "\" is not this sample's");
  }
  if (!got.multipart) {
    return differs("one part, but this sample is multipart");
  }
  if (!in_place_.empty()) {
    auto stored = read_in_place(id);
    if (!stored) {
      return std::move(stored).error();
    }
    if (got.payload != stored->payload || got.label != stored->label) {
      return differs("its parts differ from the tar's");
    }
    return {};
  }
  auto parts = parts_of(got);
  if (!parts) {
    return differs(parts.error().message());
  }
  const auto table = table_of(index_, id);
  if (parts->size() != table.size()) {
    return differs(std::to_string(parts->size()) + " parts, but this sample has " +
                   std::to_string(table.size()));
  }
  for (std::size_t i = 0; i < table.size(); ++i) {
    if ((*parts)[i].name != table[i].first || (*parts)[i].size != table[i].second) {
      return differs("part " + std::to_string(i) + " is \"" + std::string((*parts)[i].name) +
                     "\" of " + std::to_string((*parts)[i].size) + " bytes, not \"" +
                     std::string(table[i].first) + "\" of " + std::to_string(table[i].second));
    }
  }
  return check_label(id, *parts, got.label);
}

expected<void> webdataset::check_label(std::uint64_t id, const std::vector<part_view>& parts,
                                       std::int32_t label) const {
  const auto* p = index_.parts_begin(id);
  for (std::size_t i = 0; i < parts.size(); ++i, ++p) {
    if (parts[i].name != "cls") {
      continue;
    }
    std::vector<std::uint8_t> stored(static_cast<std::size_t>(p->size));
    if (auto ok = read_part(id, *p, stored.data()); !ok) {
      return ok;
    }
    if (!std::equal(stored.begin(), stored.end(), parts[i].data)) {
      return refused(id, errc::checksum_mismatch, "its cls part differs from the tar's");
    }
  }
  const auto stored_label = label_of_parts(parts);  // its cls part is the tar's now
  if (label != stored_label) {
    return refused(id, errc::checksum_mismatch,
                   "label " + std::to_string(label) + " is not this sample's (" +
                       std::to_string(stored_label) + ")");
  }
  return {};
}

}  // namespace conveyor
