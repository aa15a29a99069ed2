#pragma once
/// Packs samples into a sharded dataset, raw bytes as they are on disk (no decoding: packing
/// must be fast; bad images or parts are found and quarantined at training time): the files
/// of an image list (single-part records), a WebDataset tar set or a directory of key.ext
/// files (multipart records, so version 2 shards: shard_format.hpp). A sample that cannot be
/// read stops packing with an error naming it: a dataset never silently lacks a sample.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/dataset_writer.hpp"
#include "core/storage/image_list.hpp"
#include "core/storage/part_files.hpp"
#include "core/storage/record.hpp"
#include "core/storage/webdataset.hpp"

namespace conveyor {

struct pack_summary {
  std::uint64_t records = 0;
  std::uint64_t input_bytes = 0;    ///< the files' bytes, as read (parts: their containers)
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

/// Record `i` of a dataset being packed (counting what it read in `summary.input_bytes`), or
/// the error that stops packing.
using record_maker = std::function<expected<record>(std::uint64_t i, pack_summary& summary)>;

/// Writes records 0..count-1, as `make` gives them, into `out_dir` with these class names.
/// The loop the packers below share. Single-threaded.
expected<pack_summary> pack_records(std::uint64_t count, std::vector<std::string> class_names,
                                    const std::filesystem::path& out_dir,
                                    dataset_writer_options options, const pack_progress& progress,
                                    const record_maker& make);

/// Writes every entry of `images` (key = entry.key, label = entry.label) into `out_dir`, through
/// `rewrite` when given. An unreadable file stops packing with an error naming it.
/// Single-threaded.
expected<pack_summary> pack_images(const image_list& images, const std::filesystem::path& out_dir,
                                   dataset_writer_options options,
                                   const pack_progress& progress = {},
                                   const payload_rewrite& rewrite = {});

/// Writes every sample of `tars` into `out_dir` as webdataset::read gives it (key, parts in
/// tar order, label from its cls part); no class names. A sample the set refuses (a damaged
/// member, a duplicate key) stops packing with its error. Single-threaded.
expected<pack_summary> pack_webdataset(const webdataset& tars, const std::filesystem::path& out_dir,
                                       dataset_writer_options options,
                                       const pack_progress& progress = {});

/// Writes every sample of `files` into `out_dir` as read_part_files gives it; no class
/// names. An unreadable file stops packing with an error naming it. Single-threaded.
expected<pack_summary> pack_part_files(const part_files_list& files,
                                       const std::filesystem::path& out_dir,
                                       dataset_writer_options options,
                                       const pack_progress& progress = {});

}  // namespace conveyor
