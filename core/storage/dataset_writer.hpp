#pragma once
/// Packs records into a directory of shards of about a target size, then writes the manifest.
/// Shards are named "shard-00000.cvs", "shard-00001.cvs", ...

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/dataset_manifest.hpp"
#include "core/storage/record.hpp"
#include "core/storage/shard_writer.hpp"

namespace conveyor {

struct dataset_writer_options {
  /// A shard is closed once it reaches this size; a record is never split across shards.
  std::uint64_t target_shard_bytes = 64ull << 20;
};

/// Single-threaded.
class dataset_writer {
 public:
  /// Creates `dir` if needed. Refuses a directory that already holds a manifest.
  static expected<dataset_writer> create(const std::filesystem::path& dir,
                                         std::vector<std::string> class_names,
                                         dataset_writer_options options = {});

  /// Appends a single-part record.
  expected<void> append(std::string_view key, std::int32_t label, const std::uint8_t* payload,
                        std::uint64_t payload_size);
  /// Appends `r` as it is, multipart or not (shard_writer::append).
  expected<void> append(const record& r);
  /// Closes the last shard and writes the manifest.
  expected<dataset_manifest> finish();

 private:
  dataset_writer(std::filesystem::path dir, dataset_writer_options options,
                 std::vector<std::string> class_names);
  /// Runs `write` on the open shard (opening one first), then closes the shard when full.
  expected<void> append_to_shard(const std::function<expected<void>(shard_writer&)>& write);
  expected<void> close_shard();

  std::filesystem::path dir_;
  dataset_writer_options options_;
  dataset_manifest manifest_;
  std::optional<shard_writer> current_;
};

}  // namespace conveyor
