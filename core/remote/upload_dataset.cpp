#include "core/remote/upload_dataset.hpp"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/remote/s3_client.hpp"
#include "core/remote/s3_location.hpp"
#include "core/storage/byte_source.hpp"
#include "core/storage/dataset_manifest.hpp"

namespace conveyor {
namespace {

// One upload's shared state: where, how, what is left, the first failure.
struct upload_job {
  s3_location at;
  std::shared_ptr<const s3_access> access;
  s3_settings settings;
  std::shared_ptr<transfer_counters> counters;
  std::filesystem::path dir;
  std::vector<std::string> files;
  std::uint64_t part_bytes = 0;
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint64_t> done_bytes{0};
  std::mutex mutex;
  std::optional<error> failure;

  void fail(error e) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!failure) {
      failure = std::move(e);
    }
  }
  bool failed() {
    std::lock_guard<std::mutex> lock(mutex);
    return failure.has_value();
  }
};

expected<void> upload_parts(s3_client& client, upload_job& job, const std::string& key,
                            const byte_source& file) {
  auto id = client.begin_upload(job.at.bucket, key);
  if (!id) {
    return std::move(id).error();
  }
  std::vector<std::string> etags;
  std::vector<std::uint8_t> part;
  for (std::uint64_t at = 0; at < file.size(); at += job.part_bytes) {
    part.resize(std::min(job.part_bytes, file.size() - at));
    auto read = file.read_at(at, part.data(), part.size());
    auto etag =
        read ? client.upload_part(job.at.bucket, key, *id, static_cast<int>(etags.size() + 1),
                                  part.data(), part.size())
             : expected<std::string>(std::move(read).error());
    if (!etag) {
      client.abort_upload(job.at.bucket, key, *id);
      return std::move(etag).error();
    }
    etags.push_back(std::move(*etag));
    job.done_bytes += part.size();
  }
  if (auto ok = client.complete_upload(job.at.bucket, key, *id, etags); !ok) {
    client.abort_upload(job.at.bucket, key, *id);
    return ok;
  }
  return {};
}

expected<void> upload_file(s3_client& client, upload_job& job, const std::string& name) {
  auto file = open_file_source(job.dir / name);
  if (!file) {
    return std::move(file).error();
  }
  const auto key = job.at.key(name);
  if ((*file)->size() > job.part_bytes) {
    return upload_parts(client, job, key, **file);
  }
  std::vector<std::uint8_t> bytes((*file)->size());
  if (auto ok = (*file)->read_at(0, bytes.data(), bytes.size()); !ok) {
    return ok;
  }
  auto ok = client.put_object(job.at.bucket, key, bytes.data(), bytes.size());
  job.done_bytes += bytes.size();
  return ok;
}

void upload_worker(upload_job& job) {
  s3_client client(job.access, job.settings, job.counters);
  for (;;) {
    const auto i = job.next.fetch_add(1);
    if (i >= job.files.size() || job.failed()) {
      return;
    }
    if (auto ok = upload_file(client, job, job.files[i]); !ok) {
      job.fail(std::move(ok).error());
    }
  }
}

}  // namespace

expected<upload_summary> upload_dataset(const std::filesystem::path& dir, const std::string& url,
                                        const s3_settings& settings,
                                        const std::function<void(std::uint64_t)>& progress,
                                        const environment& env) {
  auto manifest = read_manifest(dir);
  if (!manifest) {
    return std::move(manifest).error();
  }
  auto target = resolve_s3_target(url, settings, env);
  if (!target) {
    return std::move(target).error();
  }
  upload_job job;
  job.at = target->at;
  job.access = target->access;
  job.settings = settings;
  job.counters = std::make_shared<transfer_counters>();
  job.dir = dir;
  job.part_bytes = std::max<std::uint64_t>(8u << 20, settings.read_size);
  for (const auto& shard : manifest->shards) {
    job.files.push_back(shard.file);
  }
  s3_client client(job.access, settings, job.counters);
  if (auto ok = client.delete_object(job.at.bucket, job.at.key(manifest_file_name)); !ok) {
    return std::move(ok).error();
  }
  std::vector<std::thread> workers;
  const auto count = std::min<std::size_t>(
      job.files.size(), static_cast<std::size_t>(std::max(1, settings.connections)));
  for (std::size_t i = 0; i < count; ++i) {
    workers.emplace_back([&job] { upload_worker(job); });
  }
  while (progress && job.next.load() < job.files.size() && !job.failed()) {
    progress(job.done_bytes.load());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& w : workers) {
    w.join();
  }
  if (job.failure) {
    return std::move(*job.failure);
  }
  if (auto ok = upload_file(client, job, manifest_file_name); !ok) {
    return std::move(ok).error();
  }
  if (progress) {
    progress(job.done_bytes.load());
  }
  return upload_summary{job.files.size() + 1, job.done_bytes.load(), job.counters->snapshot()};
}

}  // namespace conveyor
