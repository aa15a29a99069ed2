#include "core/remote/open_remote_dataset.hpp"

#include <algorithm>
#include <sstream>

#include "core/base/log.hpp"
#include "core/remote/s3_location.hpp"
#include "core/remote/sequential_buffer.hpp"
#include "core/storage/dataset_manifest.hpp"
#include "core/storage/sharded_dataset.hpp"
#include "core/storage/webdataset.hpp"

namespace conveyor {
namespace {

constexpr std::uint64_t manifest_limit = 64u << 20;

// What opening one dataset shares: where, how, and the counters every request adds to.
struct opening {
  s3_location at;
  std::shared_ptr<const s3_access> access;
  s3_settings settings;
  std::shared_ptr<transfer_counters> counters;
  std::uint64_t prefetch = 0;

  std::shared_ptr<remote_store> store(std::vector<remote_object_ref> objects) const {
    return remote_store::open(at.bucket, std::move(objects), access, settings, counters, prefetch);
  }
};

expected<dataset_manifest> fetch_manifest(s3_client& client, const opening& o) {
  const auto key = o.at.key(manifest_file_name);
  auto bytes = client.get_object(o.at.bucket, key, manifest_limit);
  if (!bytes) {
    auto e = std::move(bytes).error();
    if (e.code() != errc::not_found || e.message().find("NoSuchKey") == std::string::npos) {
      return e;
    }
    return error{errc::not_found, e.message() + " (no dataset manifest under " + o.at.url() +
                                      ": not a record shard set, or one still being uploaded)"};
  }
  std::istringstream text(std::string(bytes->begin(), bytes->end()));
  return parse_manifest(text, o.at.url(key));
}

expected<std::shared_ptr<const sample_source>> open_shards(s3_client& client, const opening& o,
                                                           std::shared_ptr<remote_store>& store) {
  auto manifest = fetch_manifest(client, o);
  if (!manifest) {
    return std::move(manifest).error();
  }
  std::vector<remote_object_ref> objects;
  for (const auto& shard : manifest->shards) {
    objects.push_back({o.at.key(shard.file), shard.bytes});
  }
  store = o.store(std::move(objects));
  std::size_t next = 0;
  auto dataset = sharded_dataset::open(
      std::move(*manifest),
      [&](const manifest_shard&) -> expected<std::shared_ptr<const byte_source>> {
        return store->source(next++);
      });
  if (!dataset) {
    return std::move(dataset).error();
  }
  return make_shard_source(std::move(*dataset));
}

// The .tar objects a WebDataset address names: the one it ends with, or those directly under it.
expected<std::vector<remote_object_ref>> list_tars(s3_client& client, const opening& o) {
  const bool one =
      o.at.prefix.size() > 4 && o.at.prefix.compare(o.at.prefix.size() - 4, 4, ".tar") == 0;
  const auto prefix = one || o.at.prefix.empty() ? o.at.prefix : o.at.prefix + "/";
  auto listed = client.list(o.at.bucket, prefix);
  if (!listed) {
    return std::move(listed).error();
  }
  std::vector<remote_object_ref> tars;
  for (const auto& object : *listed) {
    const auto rest = object.key.substr(prefix.size());
    const bool tar = rest.size() > 4 && rest.compare(rest.size() - 4, 4, ".tar") == 0;
    if ((one && object.key == o.at.prefix) ||
        (!one && tar && rest.find('/') == std::string::npos)) {
      tars.push_back({object.key, object.size});
    }
  }
  if (tars.empty()) {
    return error{errc::empty_dataset, o.at.url() + ": no .tar objects " +
                                          (one ? std::string("of that name")
                                               : std::string("directly under this prefix"))};
  }
  return tars;
}

expected<std::shared_ptr<const sample_source>> open_tars(s3_client& client, const opening& o,
                                                         std::shared_ptr<remote_store>& store) {
  auto tars = list_tars(client, o);
  if (!tars) {
    return std::move(tars).error();
  }
  store = o.store(std::move(*tars));
  std::vector<std::shared_ptr<sequential_buffer>> buffers;
  std::vector<std::shared_ptr<const byte_source>> sources;
  const int ahead = std::max(1, o.settings.connections / 2);
  for (std::size_t i = 0; i < store->objects(); ++i) {
    buffers.push_back(std::make_shared<sequential_buffer>(store, i, ahead));
    sources.push_back(buffers.back());
  }
  auto set = webdataset::open(std::move(sources));
  for (auto& b : buffers) {
    b->stop();
  }
  if (!set) {
    return std::move(set).error();
  }
  return make_webdataset_source(std::move(*set));
}

}  // namespace

std::uint64_t prefetch_budget(const s3_settings& settings, std::uint64_t held) {
  if (settings.prefetch_bytes > 0) {
    return settings.prefetch_bytes;
  }
  return held +
         2 * static_cast<std::uint64_t>(std::max(1, settings.connections)) * settings.read_size;
}

expected<std::shared_ptr<const remote_dataset>> open_remote_dataset(const std::string& url,
                                                                    dataset_format format,
                                                                    const s3_settings& settings,
                                                                    std::uint64_t held,
                                                                    const environment& env) {
  if (format != dataset_format::shards && format != dataset_format::webdataset) {
    return error{errc::invalid_config,
                 url +
                     ": a dataset in an object store is record shards (dataset.format = "
                     "\"shards\") or WebDataset tars (\"webdataset\"); this format reads local "
                     "files"};
  }
  auto target = resolve_s3_target(url, settings, env);
  if (!target) {
    return std::move(target).error();
  }
  log("storage")->info("{}: {}", url, target->access->describe());
  opening o{target->at, target->access, settings, std::make_shared<transfer_counters>(),
            prefetch_budget(settings, held)};
  s3_client client(o.access, settings, o.counters);
  std::shared_ptr<remote_store> store;
  auto inner = format == dataset_format::shards ? open_shards(client, o, store)
                                                : open_tars(client, o, store);
  if (!inner) {
    return std::move(inner).error();
  }
  return std::make_shared<const remote_dataset>(std::move(*inner), std::move(store), o.at.url());
}

}  // namespace conveyor
