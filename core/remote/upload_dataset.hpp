#pragma once
/// Uploads a record shard set (a directory with manifest.txt, as conveyor-pack writes it) to an
/// object store, as conveyor-pack --out s3://bucket/prefix does: first any manifest already at
/// the prefix is deleted, then every shard is uploaded (over s3.connections connections; a
/// shard larger than one part, max(8 MiB, s3.read_size), in a multipart upload, aborted if a
/// part fails), and the manifest last: a reader never sees a manifest whose shards are not all
/// there. Each request is retried as s3_client.hpp says.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "conveyor/error.hpp"
#include "core/remote/s3_settings.hpp"
#include "core/remote/transfer_counters.hpp"

namespace conveyor {

struct upload_summary {
  std::uint64_t objects = 0;  ///< shards and the manifest
  std::uint64_t bytes = 0;
  transfer_counters::totals traffic;  ///< requests, retries by reason
};

/// Errors name the local file or the object's URL and the server's answer; bad addresses and
/// settings are invalid_config. `progress(bytes uploaded)` is called now and then.
expected<upload_summary> upload_dataset(const std::filesystem::path& dir, const std::string& url,
                                        const s3_settings& settings,
                                        const std::function<void(std::uint64_t)>& progress = {},
                                        const environment& env = process_environment());

}  // namespace conveyor
