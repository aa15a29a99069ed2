#include "core/storage/dataset_packer.hpp"

#include "core/storage/byte_source.hpp"

namespace conveyor {
namespace {

expected<std::vector<std::uint8_t>> read_whole_file(const std::filesystem::path& path) {
  auto file = open_file_source(path);
  if (!file) {
    return std::move(file).error();
  }
  std::vector<std::uint8_t> bytes((*file)->size());
  if (auto ok = (*file)->read_at(0, bytes.data(), bytes.size()); !ok) {
    return std::move(ok).error();
  }
  return bytes;
}

}  // namespace

expected<pack_summary> pack_images(const image_list& images, const std::filesystem::path& out_dir,
                                   dataset_writer_options options, const pack_progress& progress,
                                   const payload_rewrite& rewrite) {
  auto writer = dataset_writer::create(out_dir, images.class_names, options);
  if (!writer) {
    return std::move(writer).error();
  }
  pack_summary summary;
  for (const auto& entry : images.entries) {
    auto bytes = read_whole_file(entry.path);
    if (!bytes) {
      return std::move(bytes).error();
    }
    summary.input_bytes += bytes->size();
    if (rewrite) {
      *bytes = rewrite(entry, std::move(*bytes));
    }
    if (auto ok = writer->append(entry.key, entry.label, bytes->data(), bytes->size()); !ok) {
      return std::move(ok).error();
    }
    summary.payload_bytes += bytes->size();
    if (progress) {
      progress(++summary.records, images.entries.size());
    } else {
      ++summary.records;
    }
  }
  auto manifest = writer->finish();
  if (!manifest) {
    return std::move(manifest).error();
  }
  summary.shards = manifest->shards.size();
  summary.dataset_bytes = manifest->total_bytes();
  return summary;
}

}  // namespace conveyor
