#include "core/storage/sharded_dataset.hpp"

#include <algorithm>

#include "core/storage/shard_stream.hpp"

namespace conveyor {
namespace {

// Opens one shard of the manifest and checks it is the shard the manifest describes.
expected<shard_reader> open_listed_shard(expected<std::shared_ptr<const byte_source>> source,
                                         const manifest_shard& listed) {
  if (!source) {
    return std::move(source).error();
  }
  auto reader = shard_reader::open(std::move(*source));
  if (!reader) {
    return reader;
  }
  if (reader->size() != listed.records ||
      reader->trailer().index_checksum != listed.index_checksum) {
    return error{errc::corrupt_shard, reader->name() + ": holds " + std::to_string(reader->size()) +
                                          " records, or an index, other than the manifest says (" +
                                          std::to_string(listed.records) + " records)"};
  }
  return reader;
}

}  // namespace

sharded_dataset::sharded_dataset(dataset_manifest manifest, std::vector<shard_reader> shards)
    : manifest_(std::move(manifest)), shards_(std::move(shards)) {
  std::uint64_t total = 0;
  for (const auto& s : shards_) {
    total += s.size();
    offsets_.push_back(total);
  }
}

expected<sharded_dataset> sharded_dataset::open(const std::filesystem::path& dir) {
  auto manifest = read_manifest(dir);
  if (!manifest) {
    return std::move(manifest).error();
  }
  return open(std::move(*manifest),
              [&](const manifest_shard& listed) { return open_file_source(dir / listed.file); });
}

expected<sharded_dataset> sharded_dataset::open(dataset_manifest manifest,
                                                const shard_opener& open_shard) {
  std::vector<shard_reader> shards;
  shards.reserve(manifest.shards.size());
  for (const auto& listed : manifest.shards) {
    auto reader = open_listed_shard(open_shard(listed), listed);
    if (!reader) {
      return std::move(reader).error();
    }
    shards.push_back(std::move(*reader));
  }
  return sharded_dataset(std::move(manifest), std::move(shards));
}

sharded_dataset::location sharded_dataset::locate(std::uint64_t index) const {
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), index);
  auto shard = static_cast<std::size_t>(it - offsets_.begin());
  auto before = shard == 0 ? 0 : offsets_[shard - 1];
  return {shard, index - before};
}

namespace {

error out_of_range(std::uint64_t index, std::uint64_t size) {
  return error{errc::not_found, "record " + std::to_string(index) + " is out of range (" +
                                    std::to_string(size) + " records)"};
}

}  // namespace

expected<record> sharded_dataset::read(std::uint64_t index) const {
  if (index >= size()) {
    return out_of_range(index, size());
  }
  auto at = locate(index);
  return shards_[at.shard].read(at.record);
}

expected<void> sharded_dataset::check(std::uint64_t index, const record& got) const {
  if (index >= size()) {
    return out_of_range(index, size());
  }
  auto at = locate(index);
  return shards_[at.shard].check(at.record, got);
}

expected<verify_report> verify_dataset(const std::filesystem::path& dir,
                                       const std::function<void(std::uint64_t)>& progress) {
  auto manifest = read_manifest(dir);
  if (!manifest) {
    return std::move(manifest).error();
  }
  verify_report report;
  for (const auto& listed : manifest->shards) {
    ++report.shards;
    auto reader = open_listed_shard(open_file_source(dir / listed.file), listed);
    if (!reader) {
      report.problems.push_back(std::move(reader).error());
      continue;
    }
    shard_stream stream(*reader);
    for (;;) {
      auto r = stream.next();
      if (!r) {
        report.problems.push_back(std::move(r).error());
        continue;
      }
      if (!r->has_value()) {
        break;
      }
      ++report.records;
      report.payload_bytes += (*r)->payload.size();
      if (progress && report.records % 256 == 0) {
        progress(report.records);
      }
    }
  }
  if (progress) {
    progress(report.records);
  }
  return report;
}

}  // namespace conveyor
