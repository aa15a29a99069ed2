#pragma once
/// Packs the files of an image list into a sharded dataset, raw bytes as they are on disk (no
/// decoding: packing must be fast; bad images are found and quarantined at training time).

#include <cstdint>
#include <filesystem>
#include <functional>

#include "conveyor/error.hpp"
#include "core/storage/dataset_writer.hpp"
#include "core/storage/image_list.hpp"

namespace conveyor {

struct pack_summary {
  std::uint64_t records = 0;
  std::uint64_t payload_bytes = 0;
  std::uint64_t shards = 0;
  std::uint64_t dataset_bytes = 0;  ///< total size of the shard files
};

/// `progress(done, total)`: records packed so far.
using pack_progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

/// Writes every entry of `images` (key = entry.key, label = entry.label) into `out_dir`.
/// An unreadable file stops packing with an error naming it: a dataset never silently lacks
/// a sample. Single-threaded.
expected<pack_summary> pack_images(const image_list& images, const std::filesystem::path& out_dir,
                                   dataset_writer_options options,
                                   const pack_progress& progress = {});

}  // namespace conveyor
