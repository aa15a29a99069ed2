#include "core/storage/dataset_packer.hpp"

#include "core/storage/byte_source.hpp"

namespace conveyor {

expected<pack_summary> pack_records(std::uint64_t count, std::vector<std::string> class_names,
                                    const std::filesystem::path& out_dir,
                                    dataset_writer_options options, const pack_progress& progress,
                                    const record_maker& make) {
  auto writer = dataset_writer::create(out_dir, std::move(class_names), options);
  if (!writer) {
    return std::move(writer).error();
  }
  pack_summary summary;
  for (std::uint64_t i = 0; i < count; ++i) {
    auto r = make(i, summary);
    if (!r) {
      return std::move(r).error();
    }
    if (auto ok = writer->append(*r); !ok) {
      return std::move(ok).error();
    }
    summary.payload_bytes += r->payload.size();
    ++summary.records;
    if (progress) {
      progress(summary.records, count);
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

expected<pack_summary> pack_images(const image_list& images, const std::filesystem::path& out_dir,
                                   dataset_writer_options options, const pack_progress& progress,
                                   const payload_rewrite& rewrite) {
  return pack_records(images.entries.size(), images.class_names, out_dir, options, progress,
                      [&](std::uint64_t i, pack_summary& summary) -> expected<record> {
                        const auto& entry = images.entries[i];
                        auto bytes = read_whole_file(entry.path);
                        if (!bytes) {
                          return std::move(bytes).error();
                        }
                        summary.input_bytes += bytes->size();
                        if (rewrite) {
                          *bytes = rewrite(entry, std::move(*bytes));
                        }
                        return record{entry.key, entry.label, std::move(*bytes)};
                      });
}

expected<pack_summary> pack_webdataset(const webdataset& tars, const std::filesystem::path& out_dir,
                                       dataset_writer_options options,
                                       const pack_progress& progress) {
  return pack_records(tars.size(), {}, out_dir, options, progress,
                      [&](std::uint64_t id, pack_summary& summary) {
                        auto r = tars.read(id);
                        summary.input_bytes += r ? r->payload.size() : 0;
                        return r;
                      });
}

expected<pack_summary> pack_part_files(const part_files_list& files,
                                       const std::filesystem::path& out_dir,
                                       dataset_writer_options options,
                                       const pack_progress& progress) {
  return pack_records(files.samples.size(), {}, out_dir, options, progress,
                      [&](std::uint64_t i, pack_summary& summary) {
                        auto r = read_part_files(files.samples[i]);
                        summary.input_bytes += r ? r->payload.size() : 0;
                        return r;
                      });
}

}  // namespace conveyor
