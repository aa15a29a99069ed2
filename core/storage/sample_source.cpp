#include "core/storage/sample_source.hpp"

#include "core/storage/byte_source.hpp"
#include "core/storage/image_list.hpp"
#include "core/storage/librispeech.hpp"
#include "core/storage/part_files.hpp"
#include "core/storage/sharded_dataset.hpp"
#include "core/storage/webdataset.hpp"

namespace conveyor {
namespace {

error differs(const std::string& where, const std::string& what) {
  return error{errc::checksum_mismatch, where + ": " + what};
}

// `got` has the key, label and multipart flag of `key`, `label` and `multipart` (stored at
// `where`).
expected<void> check_key_and_label(const std::string& where, const std::string& key,
                                   std::int32_t label, bool multipart, const record& got) {
  if (got.key != key) {
    return differs(where, "key \"" + got.key + "\" is not this sample's (\"" + key + "\")");
  }
  if (got.label != label) {
    return differs(where, "label " + std::to_string(got.label) + " is not this sample's (" +
                              std::to_string(label) + ")");
  }
  if (got.multipart != multipart) {
    return differs(where, got.multipart ? "a multipart record, but this sample is one part"
                                        : "one part, but this sample is multipart");
  }
  return {};
}

class shard_source final : public sample_source {
 public:
  explicit shard_source(sharded_dataset dataset) : dataset_(std::move(dataset)) {}

  std::uint64_t size() const noexcept override { return dataset_.size(); }
  const std::vector<std::string>& class_names() const noexcept override {
    return dataset_.manifest().class_names;
  }
  std::string locate(std::uint64_t id) const override {
    auto at = dataset_.locate(id);
    return record_location(dataset_.shards()[at.shard].name(), at.record);
  }
  expected<record> read(std::uint64_t id) const override { return dataset_.read(id); }
  expected<void> check(std::uint64_t id, const record& got) const override {
    return dataset_.check(id, got);
  }
  std::uint64_t stored_bytes(std::uint64_t id) const override {
    auto at = dataset_.locate(id);
    return dataset_.shards()[at.shard].entry(at.record).size;
  }
  std::optional<std::uint64_t> shard_of(std::uint64_t id) const override {
    return dataset_.locate(id).shard;
  }
  std::vector<std::filesystem::path> files() const override {
    std::vector<std::filesystem::path> out;
    for (const auto& shard : dataset_.shards()) {
      out.emplace_back(shard.name());  // a shard's name is its file's path
    }
    return out;
  }
  std::vector<storage_extent> extents(std::uint64_t id) const override {
    auto at = dataset_.locate(id);
    const auto& entry = dataset_.shards()[at.shard].entry(at.record);
    return {{at.shard, entry.offset, entry.size}};
  }

 private:
  sharded_dataset dataset_;
};

class folder_source final : public sample_source {
 public:
  explicit folder_source(image_list images) : images_(std::move(images)) {}

  std::uint64_t size() const noexcept override { return images_.entries.size(); }
  const std::vector<std::string>& class_names() const noexcept override {
    return images_.class_names;
  }
  std::string locate(std::uint64_t id) const override { return images_.entries[id].path.string(); }
  expected<record> read(std::uint64_t id) const override {
    const auto& entry = images_.entries[id];
    auto file = open_file_source(entry.path);
    if (!file) {
      return std::move(file).error();
    }
    record r{entry.key, entry.label, std::vector<std::uint8_t>((*file)->size())};
    if (auto ok = (*file)->read_at(0, r.payload.data(), r.payload.size()); !ok) {
      return std::move(ok).error();
    }
    return r;
  }
  expected<void> check(std::uint64_t id, const record& got) const override {
    const auto& entry = images_.entries[id];
    if (auto same = check_key_and_label(entry.path.string(), entry.key, entry.label, false, got);
        !same) {
      return same;
    }
    const auto size = stored_bytes(id);  // 0: the file is gone; its read will say so
    if (size != 0 && size != got.payload.size()) {
      return differs(entry.path.string(), std::to_string(got.payload.size()) +
                                              " bytes, but the file holds " + std::to_string(size));
    }
    return {};
  }
  std::uint64_t stored_bytes(std::uint64_t id) const override {
    std::error_code ec;
    auto bytes = std::filesystem::file_size(images_.entries[id].path, ec);
    return ec ? 0 : bytes;
  }
  std::optional<std::uint64_t> shard_of(std::uint64_t /*id*/) const override {
    return std::nullopt;
  }
  std::vector<std::filesystem::path> files() const override {
    std::vector<std::filesystem::path> out;
    for (const auto& entry : images_.entries) {
      out.push_back(entry.path);
    }
    return out;
  }

 private:
  image_list images_;
};

class webdataset_source final : public sample_source {
 public:
  explicit webdataset_source(webdataset tars) : tars_(std::move(tars)) {}

  std::uint64_t size() const noexcept override { return tars_.size(); }
  const std::vector<std::string>& class_names() const noexcept override {
    static const std::vector<std::string> none;  // labels come from the samples' cls parts
    return none;
  }
  std::string locate(std::uint64_t id) const override { return tars_.locate(id); }
  expected<record> read(std::uint64_t id) const override { return tars_.read(id); }
  expected<void> check(std::uint64_t id, const record& got) const override {
    return tars_.check(id, got);
  }
  std::uint64_t stored_bytes(std::uint64_t id) const override { return tars_.payload_size(id); }
  std::optional<std::uint64_t> shard_of(std::uint64_t id) const override {
    return tars_.tar_of(id);
  }
  std::vector<std::filesystem::path> files() const override { return tars_.files(); }
  std::vector<storage_extent> extents(std::uint64_t id) const override {
    const auto& index = tars_.index();
    std::vector<storage_extent> out;
    const auto* p = index.parts_begin(id);
    for (std::uint32_t i = 0; i < index.at(id).part_count; ++i, ++p) {
      if (p->size > 0) {
        out.push_back({index.at(id).tar, p->offset, p->size});
      }
    }
    return out;
  }

 private:
  webdataset tars_;
};

// A directory of MLPerf-style <key>_<name>.npy files (part_files.hpp scan_npy_pairs).
class npy_pairs_source final : public sample_source {
 public:
  npy_pairs_source(part_files_list samples, std::vector<std::string> in_place)
      : samples_(std::move(samples)), in_place_(std::move(in_place)) {}

  std::uint64_t size() const noexcept override { return samples_.samples.size(); }
  const std::vector<std::string>& class_names() const noexcept override {
    static const std::vector<std::string> none;  // segmentation: the labels are volumes
    return none;
  }
  std::string locate(std::uint64_t id) const override {
    const auto& parts = samples_.samples[id].parts;
    return parts.empty() ? samples_.samples[id].key : parts.front().second.string();
  }
  expected<record> read(std::uint64_t id) const override {
    return read_part_files(samples_.samples[id], in_place_);
  }
  std::uint64_t stored_bytes(std::uint64_t id) const override {
    std::uint64_t bytes = 0;
    for (const auto& part : samples_.samples[id].parts) {
      std::error_code ec;
      auto size = std::filesystem::file_size(part.second, ec);
      bytes += ec ? 0 : size;
    }
    return bytes;
  }
  std::optional<std::uint64_t> shard_of(std::uint64_t /*id*/) const override {
    return std::nullopt;
  }
  std::vector<std::filesystem::path> files() const override {
    std::vector<std::filesystem::path> out;
    for (const auto& sample : samples_.samples) {
      for (const auto& part : sample.parts) {
        out.push_back(part.second);
      }
    }
    return out;
  }

 private:
  part_files_list samples_;
  std::vector<std::string> in_place_;
};

// A LibriSpeech directory (librispeech.hpp): audio files and their transcript lines.
class librispeech_source final : public sample_source {
 public:
  explicit librispeech_source(librispeech_set set) : set_(std::move(set)) {}

  std::uint64_t size() const noexcept override { return set_.utterances.size(); }
  const std::vector<std::string>& class_names() const noexcept override {
    static const std::vector<std::string> none;  // speech: the labels are transcripts
    return none;
  }
  std::string locate(std::uint64_t id) const override { return set_.utterances[id].audio.string(); }
  expected<record> read(std::uint64_t id) const override {
    return read_utterance(set_.utterances[id]);
  }
  std::uint64_t stored_bytes(std::uint64_t id) const override {
    std::error_code ec;
    auto size = std::filesystem::file_size(set_.utterances[id].audio, ec);
    return ec ? 0 : size;
  }
  std::optional<std::uint64_t> shard_of(std::uint64_t /*id*/) const override {
    return std::nullopt;
  }
  std::vector<std::filesystem::path> files() const override {
    std::vector<std::filesystem::path> out;
    for (const auto& u : set_.utterances) {
      out.push_back(u.audio);
    }
    return out;
  }

 private:
  librispeech_set set_;
};

expected<webdataset> open_webdataset(const std::filesystem::path& path,
                                     const std::vector<std::string>& in_place) {
  auto tars = webdataset::open(path);
  if (tars && !in_place.empty()) {
    if (auto ok = tars->keep_in_place(in_place); !ok) {
      return std::move(ok).error();
    }
  }
  return tars;
}

template <class Source, class Opened>
expected<std::shared_ptr<const sample_source>> wrap(Opened opened) {
  if (!opened) {
    return std::move(opened).error();
  }
  return std::shared_ptr<const sample_source>(std::make_shared<Source>(std::move(*opened)));
}

}  // namespace

std::vector<storage_extent> sample_source::extents(std::uint64_t /*id*/) const {
  return {};
}

void sample_source::will_read(std::uint64_t /*epoch*/,
                              const std::vector<std::uint64_t>& /*ids*/) const {}

void sample_source::use_cache(std::shared_ptr<const minio_cache> /*cache*/) const {}

std::shared_ptr<const sample_source> make_shard_source(sharded_dataset dataset) {
  return std::make_shared<shard_source>(std::move(dataset));
}

std::shared_ptr<const sample_source> make_webdataset_source(webdataset tars) {
  return std::make_shared<webdataset_source>(std::move(tars));
}

expected<void> sample_source::check(std::uint64_t id, const record& got) const {
  auto stored = read(id);
  if (!stored) {
    return std::move(stored).error();
  }
  const auto where = locate(id);
  if (auto same = check_key_and_label(where, stored->key, stored->label, stored->multipart, got);
      !same) {
    return same;
  }
  if (got.payload != stored->payload) {
    return differs(where, "payload differs from the stored one");
  }
  return {};
}

expected<std::shared_ptr<const sample_source>> open_sample_source(
    const std::filesystem::path& path, dataset_format format,
    const std::vector<std::string>& in_place) {
  if (!in_place.empty() && format != dataset_format::webdataset &&
      format != dataset_format::npy_pairs) {
    return error{errc::invalid_config,
                 "map_parts names parts of multipart samples: the format must be \"webdataset\" "
                 "or \"npy_pairs\""};
  }
  switch (format) {
    case dataset_format::shards:
      return wrap<shard_source>(sharded_dataset::open(path));
    case dataset_format::webdataset:
      return wrap<webdataset_source>(open_webdataset(path, in_place));
    case dataset_format::npy_pairs: {
      auto samples = scan_npy_pairs(path);
      if (!samples) {
        return std::move(samples).error();
      }
      return std::shared_ptr<const sample_source>(
          std::make_shared<npy_pairs_source>(std::move(*samples), in_place));
    }
    case dataset_format::librispeech:
      return wrap<librispeech_source>(scan_librispeech(path));
    case dataset_format::folder:
      break;
    case dataset_format::python:
      return error{errc::invalid_argument,
                   path.string() +
                       ": a Python Dataset is opened from its setup by the node's "
                       "[python] section, not as files"};
  }
  return wrap<folder_source>(scan_image_folder(path));
}

}  // namespace conveyor
