#include "api/resolve_topology.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

#include "api/resolve_autotune.hpp"
#include "api/resolve_devices.hpp"
#include "api/resolve_fields.hpp"
#include "api/resolve_order.hpp"
#include "api/resolve_python.hpp"
#include "core/base/log.hpp"
#include "core/remote/open_remote_dataset.hpp"
#include "core/remote/s3_location.hpp"

namespace conveyor {
namespace {

batcher_settings resolve_settings(const topology& t, int gpus) {
  const auto counts = resolve_counts(t.pipeline);
  batcher_settings s;
  s.seed = t.dataset.seed;  // and s.order: resolve_order, once the dataset is open
  s.epochs = static_cast<std::uint64_t>(t.trainer.epochs);
  s.batch_size = static_cast<std::uint64_t>(t.pipeline.batch_size);
  s.gpus = gpus;
  s.workers = counts.preprocessors;
  s.per_worker_limit = static_cast<std::uint64_t>(counts.per_worker_limit);
  // 0: "auto", default_window when the pipeline starts
  s.window_samples = t.pipeline.window_samples == auto_count
                         ? 0
                         : static_cast<std::uint64_t>(t.pipeline.window_samples);
  // Hand-offs serve the latency-aware policy; in_order stays the plain baseline.
  s.hand_off = t.batching.policy == batching_policy::latency_aware;
  s.budget.percentile = t.batching.straggler_percentile;
  s.budget.min_budget_ns = std::llround(t.batching.min_budget_ms * 1e6);
  s.handoff_share = t.batching.handoff_share;
  s.straggler_backlog = static_cast<std::uint64_t>(t.batching.straggler_backlog);
  s.max_sample_retries = static_cast<std::uint32_t>(t.supervision.max_sample_retries);
  return s;
}

// batching.bucket_by, resolved to the field's index (the loader checked that it is one).
bucketing bucketing_of(const batching_config& b, const sample_schema& schema) {
  bucketing out;
  if (auto field = schema.index_of(b.bucket_by); field) {
    out.field = *field;
    out.axis = b.bucket_axis;
    out.boundaries = b.bucket_boundaries;
    out.learned = b.bucket_boundaries.empty() ? static_cast<std::size_t>(b.bucket_count) : 0;
  }
  return out;
}

std::chrono::milliseconds milliseconds(double ms) {
  return std::chrono::milliseconds(std::llround(ms));
}

supervision_settings resolve_supervision(const supervision_config& c, std::uint64_t seed) {
  supervision_settings s;
  s.strategy = c.strategy;
  s.restart = {c.max_restarts, milliseconds(c.restart_period_s * 1000.0),
               milliseconds(c.backoff_min_ms), milliseconds(c.backoff_max_ms), seed};
  s.hang_timeout = std::chrono::milliseconds(c.hang_timeout_ms);
  return s;
}

fault_plan resolve_faults(const fault_config& f) {
  return {f.crash_reader, f.crash_preprocessor, f.crash_straggler,
          f.delay_ms,     f.delay_probability,  f.read_error,
          f.seed};
}

// The host feeders' engine for a drill of device faults: threaded, copying, faulting.
host_engine_options copy_fault_engine(const fault_config& f) {
  host_engine_options e;
  e.faults.fail_copy = f.copy_fault;
  e.faults.stall_copy = f.copy_stall;
  e.faults.copy_delay =
      std::chrono::microseconds(static_cast<std::int64_t>(f.copy_delay_ms * 1000.0));
  return e;
}

}  // namespace

int hardware_cores() noexcept {
  auto n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

int auto_readers(int preprocessors) noexcept {
  return std::max(1, (preprocessors + 7) / 8);
}

int auto_per_worker_limit(int preprocessors) noexcept {
  return preprocessors < 8 ? 2 : 4;
}

pipeline_counts resolve_counts(const pipeline_config& p) noexcept {
  pipeline_counts c;
  c.preprocessors = p.preprocessors == auto_count ? hardware_cores() : p.preprocessors;
  c.readers = p.readers == auto_count ? auto_readers(c.preprocessors) : p.readers;
  c.per_worker_limit = p.per_worker_limit == auto_count ? auto_per_worker_limit(c.preprocessors)
                                                        : p.per_worker_limit;
  c.stragglers = p.stragglers == auto_count ? hardware_cores() : p.stragglers;
  return c;
}

pipeline_counts spawned_counts(const pipeline_config& p) noexcept {
  auto c = resolve_counts(p);
  if (!p.autotune) {
    return c;
  }
  c.preprocessors = std::max(2 * hardware_cores(), c.preprocessors);
  c.stragglers = p.stragglers == auto_count ? c.preprocessors : c.stragglers;
  c.readers = std::max(c.readers, 2 * auto_readers(c.preprocessors));
  return c;
}

namespace {

// This node's share of each epoch ([cluster]).
expected<epoch_share> share_of(const topology& t, const sample_source& source) {
  epoch_share share;
  share.rank = static_cast<std::uint64_t>(t.cluster.rank_or_default());
  share.world = static_cast<std::uint64_t>(t.cluster.world_or_default());
  if (t.cluster.split != shard_by::shard || share.world == 1) {
    return share;
  }
  if (source.size() > 0 && !source.shard_of(0)) {
    return error{errc::invalid_config, t.source +
                                           ": cluster.shard_by = \"shard\" needs a dataset in "
                                           "shards (dataset.format = \"shards\" or "
                                           "\"webdataset\")"};
  }
  share.ids.assign(source.size(), false);
  for (std::uint64_t id = 0; id < source.size(); ++id) {
    share.ids[id] = *source.shard_of(id) % share.world == share.rank;
  }
  return share;
}

// How the cluster's caches split the samples (core/storage/cache_plan.hpp): a node that reads
// only its own shards caches only them; nodes that serve each other split the whole set.
cache_partition partition_of(const cluster_config& c) {
  if (c.world_or_default() > 1 && c.split == shard_by::shard) {
    return cache_partition::by_shard;
  }
  return c.partitioned() ? cache_partition::by_hash : cache_partition::whole;
}

// The MinIO cache of [cache], planned for this node's place in the cluster.
expected<std::shared_ptr<minio_cache>> make_cache(const topology& t, const sample_source& source) {
  cache_capacity capacity{t.cache.memory, t.cache.disk_size};
  std::unique_ptr<disk_tier> disk;
  if (!t.cache.disk.empty()) {
    auto opened = disk_tier::open(t.cache.disk, t.cache.disk_size);
    if (!opened) {
      return error{errc::invalid_config, t.source + ": " + opened.error().message()};
    }
    disk = std::move(*opened);
  }
  cache_plan::shape where{static_cast<std::uint64_t>(t.cluster.rank_or_default()),
                          static_cast<std::uint64_t>(t.cluster.world_or_default()),
                          partition_of(t.cluster)};
  auto plan =
      std::make_shared<const cache_plan>(cache_plan::make(source, capacity, t.dataset.seed, where));
  log("pipeline")
      ->info(
          "cache: {} of {} samples, {:.1f} MB in memory of cache.memory {:.1f} MB, {:.1f} MB on "
          "disk of cache.disk_size {:.1f} MB",
          plan->samples(cache_tier::memory) + plan->samples(cache_tier::disk), source.size(),
          static_cast<double>(plan->bytes(cache_tier::memory)) / 1e6,
          static_cast<double>(t.cache.memory) / 1e6,
          static_cast<double>(plan->bytes(cache_tier::disk)) / 1e6,
          static_cast<double>(t.cache.disk_size) / 1e6);
  return std::make_shared<minio_cache>(std::move(plan), capacity, std::move(disk));
}

// [cluster] peers, checked against the rest of the topology; nullopt without peers.
expected<std::optional<peer_settings>> peers_of(const topology& t) {
  const auto& c = t.cluster;
  if (!c.partitioned()) {
    return std::optional<peer_settings>{};
  }
  auto bad_key = [&](const std::string& key, const std::string& what) {
    return error{errc::invalid_config, t.source + ": " + key + ": " + what};
  };
  auto bad = [&](const std::string& what) { return bad_key("cluster.peers", what); };
  if (c.peers.size() != static_cast<std::size_t>(c.world_or_default())) {
    return bad("lists " + std::to_string(c.peers.size()) + " nodes, but the cluster has " +
               std::to_string(c.world_or_default()) +
               " (cluster.world, or WORLD_SIZE): one address per node, in rank order");
  }
  if (!t.cache.enabled()) {
    return bad(
        "the nodes serve each other's cache misses, but this node has no cache: set "
        "cache.memory (or cache.disk and cache.disk_size)");
  }
  if (c.peer_wait_s >= t.pipeline.next_timeout_s) {
    return bad("cluster.peer_wait_s (" + std::to_string(c.peer_wait_s) +
               ") must be below pipeline.next_timeout_s (" +
               std::to_string(t.pipeline.next_timeout_s) +
               "): trainers wait for the first batch while the node waits for its peers");
  }
  peer_settings p;
  p.nodes = c.peers;
  p.rank = static_cast<std::uint64_t>(c.rank_or_default());
  p.fetch_timeout = std::chrono::milliseconds(c.peer_timeout_ms);
  p.retry = std::chrono::milliseconds(c.peer_retry_ms);
  p.wait = milliseconds(c.peer_wait_s * 1000.0);
  p.tls = c.tls;
  p.server_workers = resolve_counts(t.pipeline).readers;
  if (!c.secret_file.empty()) {
    auto secret = read_secret_file(c.secret_file);
    if (!secret) {
      return bad_key("cluster.secret_file", secret.error().message());
    }
    p.secret = std::move(*secret);
  }
  return std::optional<peer_settings>(std::move(p));
}

expected<std::shared_ptr<const sample_source>> open_any_dataset(const topology& t) {
  if (t.dataset.format == dataset_format::python) {
    return open_python_dataset(t);
  }
  if (!is_s3_url(t.dataset.path)) {
    return open_sample_source(t.dataset.path, t.dataset.format, t.dataset.map_parts);
  }
  if (!t.dataset.map_parts.empty()) {
    return error{errc::invalid_config,
                 "dataset.map_parts leaves parts in their files: a dataset in an object store "
                 "has none on this machine"};
  }
  // Fetched ahead: what the cache takes in, and in blocks the span read and the next one.
  const auto spans = t.dataset.shuffle == shuffle_mode::blocks
                         ? 2 * t.dataset.shuffle_span * t.dataset.shuffle_block
                         : 0;
  auto remote = open_remote_dataset(t.dataset.path, t.dataset.format, t.s3, t.cache.memory + spans);
  if (!remote) {
    return std::move(remote).error();
  }
  return std::shared_ptr<const sample_source>(std::move(*remote));
}

// An explicit pipeline.window_samples must hold a batch for every feeder: with less, a batch
// could never be completed.
std::optional<error> window_too_small(const topology& t, int slots) {
  const auto need = static_cast<std::int64_t>(t.pipeline.batch_size) * slots;
  if (t.pipeline.window_samples == auto_count || t.pipeline.window_samples >= need) {
    return std::nullopt;
  }
  return error{
      errc::invalid_config,
      t.source + ": pipeline.window_samples = " + std::to_string(t.pipeline.window_samples) +
          " cannot hold a batch for each of " + std::to_string(slots) +
          " feeders (pipeline.batch_size " + std::to_string(t.pipeline.batch_size) + " x " +
          std::to_string(slots) + " = " + std::to_string(need) + " samples at least)"};
}

}  // namespace

expected<std::shared_ptr<const sample_source>> open_dataset(const topology& t) {
  auto source = open_any_dataset(t);
  if (!source && t.dataset.format == dataset_format::python) {
    return source.error();  // it names its key (python.order_file)
  }
  if (!source) {
    return error{errc::invalid_config, t.source + ": dataset.path: " + source.error().what()};
  }
  log("node")->info("dataset {} ({}): {} samples", t.dataset.path, to_string(t.dataset.format),
                    (*source)->size());
  return source;
}

namespace {

// The fields of `t`: `given` when there are (resolved for host feeders), else resolved here.
expected<resolved_fields> fields_of(const topology& t, bool on_gpu,
                                    const std::shared_ptr<const resolved_fields>& given) {
  if (given && !on_gpu) {
    return *given;
  }
  return resolve_fields(t, on_gpu);
}

}  // namespace

expected<pipeline_spec> resolve_topology(const topology& t,
                                         std::shared_ptr<const sample_source> dataset,
                                         std::shared_ptr<const resolved_fields> given_fields) {
  if (!t.dataset.map_parts.empty() && t.cluster.partitioned()) {
    // A descriptor names a file on this node: a peer could not read it, and a peer's could
    // name any file here.
    return error{errc::invalid_config, t.source +
                                           ": dataset.map_parts leaves parts in this node's "
                                           "files: it cannot be used with cluster.peers"};
  }
  auto source = dataset ? expected<std::shared_ptr<const sample_source>>(std::move(dataset))
                        : open_dataset(t);
  if (!source) {
    return std::move(source).error();
  }
  auto devices = resolve_devices(t.gpus, t.source);
  if (!devices) {
    return std::move(devices).error();
  }
  const int slots = gpu_slots(t.gpus, *devices);
  if (auto small = window_too_small(t, slots)) {
    return std::move(*small);
  }
  if (t.serve.enabled() && !devices->empty()) {
    // Served ranks read host batches from shared memory and copy to their GPU themselves.
    log("node")->info(
        "serve: {} ranks get host batches in shared memory (the clients copy them "
        "to their GPUs); normalize runs on the CPU",
        slots);
    devices->clear();
  }
  // The chain's final normalize runs where the batch is assembled: with on = "gpu", in the
  // CUDA feeders on the device; otherwise in every feeder on the CPU, from the uint8 samples
  // straight into the batch (one pass, no float tensor per sample to copy).
  const bool on_gpu = !devices->empty() && t.normalize_on_gpu;
  if (devices->empty() && t.normalize_dtype == output_dtype::bfloat16) {
    log("node")->warn("normalize dtype = \"bfloat16\" needs a CUDA feeder: serving float32");
  }
  auto fields = fields_of(t, on_gpu, given_fields);
  if (!fields) {
    return std::move(fields).error();
  }
  pipeline_spec spec{
      std::move(*source),         fields->chain,    fields->schema, fields->batch_schema,
      resolve_settings(t, slots), t.batching.policy};
  spec.cuda_devices = std::move(*devices);
  spec.settings.buckets = bucketing_of(t.batching, *fields->schema);
  spec.normalize_field = fields->normalize_field;
  (on_gpu ? spec.gpu_normalize : spec.collate_normalize) = fields->in_feeder;
  spec.gpu_normalize_type =
      t.normalize_dtype == output_dtype::bfloat16 ? dtype::bfloat16 : dtype::float32;
  const auto counts = resolve_counts(t.pipeline);
  spec.readers = counts.readers;
  // "auto": one per core. With fewer, a window full of slow samples left cores idle
  // (bench/results/peers.md: latency_aware used 1.4 of 2 cores with one straggler actor);
  // hand-off permits bound what they take (batching.handoff_share, straggler_backlog).
  spec.stragglers = counts.stragglers;
  spec.prefetch_batches = static_cast<std::uint64_t>(t.pipeline.prefetch_batches);
  spec.next_timeout = std::chrono::ceil<std::chrono::milliseconds>(
      std::chrono::duration<double>(t.pipeline.next_timeout_s));
  spec.monitor_interval = std::chrono::milliseconds(t.monitor.interval_ms);
  if (!t.monitor.metrics.empty()) {
    // Checked when the topology was read.
    auto address = parse_peer_address(t.monitor.metrics, port_zero::any_port);
    if (!address) {
      return error{errc::invalid_config, "monitor.metrics: " + address.error().message()};
    }
    spec.metrics = *address;
  }
  spec.supervision = resolve_supervision(t.supervision, t.dataset.seed);
  spec.faults = resolve_faults(t.faults);
  if (t.faults.copy_faults()) {
    if (!spec.cuda_devices.empty()) {
      return error{errc::invalid_config,
                   t.source +
                       ": faults.copy_fault, copy_stall and copy_delay_ms are injected by "
                       "the host engine of host feeders, but CUDA devices are selected "
                       "(set gpus to a number of host feeders for a drill)"};
    }
    spec.host_engine = copy_fault_engine(t.faults);
  }
  auto share = share_of(t, *spec.source);
  if (!share) {
    return std::move(share).error();
  }
  spec.settings.share = std::move(*share);
  auto order = resolve_order(t, *spec.source);
  if (!order) {
    return std::move(order).error();
  }
  spec.settings.order = *order;
  auto peers = peers_of(t);
  if (!peers) {
    return std::move(peers).error();
  }
  if (*peers && t.cluster.split == shard_by::shard) {
    log("cluster")->warn(
        "cluster.peers with cluster.shard_by = \"shard\": each node reads and caches only its "
        "own shards, so no peer is ever asked; the nodes do not connect");
    peers->reset();
  }
  spec.peers = std::move(*peers);
  if (t.cache.enabled()) {
    auto cache = make_cache(t, *spec.source);
    if (!cache) {
      return std::move(cache).error();
    }
    spec.cache = std::move(*cache);
    spec.source->use_cache(spec.cache);  // a dataset in a store fetches the cache's blocks once
  }
  if (!t.supervision.quarantine_report.empty()) {
    auto report = quarantine_report::open(t.supervision.quarantine_report);
    if (!report) {
      return error{errc::invalid_config,
                   t.source + ": supervision.quarantine_report: " + report.error().what()};
    }
    spec.quarantine = std::move(*report);
  }
  if (auto planned = plan_autotune(t, spec); !planned) {
    return std::move(planned).error();
  }
  return spec;
}

}  // namespace conveyor
