#pragma once
/// Packs the files of an image list into a sharded dataset, raw bytes as they are on disk (no
/// decoding: packing must be fast; bad images are found and quarantined at training time).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/dataset_writer.hpp"
#include "core/storage/image_list.hpp"

namespace conveyor {

struct pack_summary {
  std::uint64_t records = 0;
  std::uint64_t input_bytes = 0;    ///< the files' bytes, as read
  std::uint64_t payload_bytes = 0;  ///< as stored (after the rewrite, when there is one)
  std::uint64_t shards = 0;
  std::uint64_t dataset_bytes = 0;  ///< total size of the shard files
};

/// `progress(done, total)`: records packed so far.
using pack_progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

/// What is stored for a file, given its bytes (e.g. conveyor-pack --restart's restart-indexed
/// JPEG); the bytes themselves where the rewrite does not apply. Empty: stored as read.
using payload_rewrite =
    std::function<std::vector<std::uint8_t>(const image_entry& entry, std::vector<std::uint8_t>)>;

/// Writes every entry of `images` (key = entry.key, label = entry.label) into `out_dir`, through
/// `rewrite` when given. An unreadable file stops packing with an error naming it: a dataset
/// never silently lacks a sample. Single-threaded.
expected<pack_summary> pack_images(const image_list& images, const std::filesystem::path& out_dir,
                                   dataset_writer_options options,
                                   const pack_progress& progress = {},
                                   const payload_rewrite& rewrite = {});

}  // namespace conveyor
