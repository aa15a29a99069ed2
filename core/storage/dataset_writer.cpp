#include "core/storage/dataset_writer.hpp"

#include <cstdio>

namespace conveyor {
namespace {

std::string shard_file_name(std::size_t number) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "shard-%05zu.cvs", number);
  return buf;
}

}  // namespace

expected<dataset_writer> dataset_writer::create(const std::filesystem::path& dir,
                                                std::vector<std::string> class_names,
                                                dataset_writer_options options) {
  if (options.target_shard_bytes == 0) {
    return error{errc::invalid_argument, "target shard size must be positive"};
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return error{errc::io_error, dir.string() + ": cannot create directory: " + ec.message()};
  }
  if (std::filesystem::exists(dir / manifest_file_name, ec)) {
    return error{
        errc::invalid_argument,
        dir.string() + ": already holds a dataset (manifest.txt); choose an empty directory"};
  }
  return dataset_writer(dir, options, std::move(class_names));
}

dataset_writer::dataset_writer(std::filesystem::path dir, dataset_writer_options options,
                               std::vector<std::string> class_names)
    : dir_(std::move(dir)), options_(options) {
  manifest_.class_names = std::move(class_names);
}

expected<void> dataset_writer::append(std::string_view key, std::int32_t label,
                                      const std::uint8_t* payload, std::uint64_t payload_size) {
  return append_to_shard(
      [&](shard_writer& shard) { return shard.append(key, label, payload, payload_size); });
}

expected<void> dataset_writer::append(const record& r) {
  return append_to_shard([&](shard_writer& shard) { return shard.append(r); });
}

expected<void> dataset_writer::append_to_shard(
    const std::function<expected<void>(shard_writer&)>& write) {
  if (!current_) {
    auto writer = shard_writer::create(dir_ / shard_file_name(manifest_.shards.size()));
    if (!writer) {
      return std::move(writer).error();
    }
    current_.emplace(std::move(*writer));
  }
  if (auto ok = write(*current_); !ok) {
    return ok;
  }
  if (current_->bytes_written() >= options_.target_shard_bytes) {
    return close_shard();
  }
  return {};
}

expected<void> dataset_writer::close_shard() {
  auto summary = current_->finish();
  current_.reset();
  if (!summary) {
    return std::move(summary).error();
  }
  manifest_.shards.push_back({summary->path.filename().string(), summary->records, summary->bytes,
                              summary->index_checksum});
  return {};
}

expected<dataset_manifest> dataset_writer::finish() {
  if (current_) {
    if (auto ok = close_shard(); !ok) {
      return std::move(ok).error();
    }
  }
  if (manifest_.shards.empty()) {
    return error{errc::empty_dataset, dir_.string() + ": no records were written"};
  }
  if (auto ok = write_manifest(dir_, manifest_); !ok) {
    return std::move(ok).error();
  }
  return manifest_;
}

}  // namespace conveyor
