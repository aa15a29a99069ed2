#include "core/storage/sample_source.hpp"

#include "core/storage/byte_source.hpp"
#include "core/storage/image_list.hpp"
#include "core/storage/sharded_dataset.hpp"

namespace conveyor {
namespace {

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

template <class Source, class Opened>
expected<std::shared_ptr<const sample_source>> wrap(Opened opened) {
  if (!opened) {
    return std::move(opened).error();
  }
  return std::shared_ptr<const sample_source>(std::make_shared<Source>(std::move(*opened)));
}

}  // namespace

expected<std::shared_ptr<const sample_source>> open_sample_source(const std::filesystem::path& path,
                                                                  dataset_format format) {
  if (format == dataset_format::shards) {
    return wrap<shard_source>(sharded_dataset::open(path));
  }
  return wrap<folder_source>(scan_image_folder(path));
}

}  // namespace conveyor
