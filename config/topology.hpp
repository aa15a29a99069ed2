#pragma once
/// The topology of one Conveyor node: every setting of its configuration file as typed,
/// validated plain data. load_topology (config/load_topology.hpp) builds it from TOML; actors
/// receive the parts they need in their constructors and never look up string keys. A
/// default-constructed section holds the documented defaults; a topology that came out of the
/// loader also satisfies every range below and has a transform list that
/// transform_chain::build accepts.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/field_schema.hpp"
#include "core/batching/batch_policy.hpp"
#include "core/batching/epoch_order.hpp"
#include "core/cluster/peer_address.hpp"
#include "core/cluster/tls_files.hpp"
#include "core/remote/s3_settings.hpp"
#include "core/storage/sample_source.hpp"
#include "core/supervision/restart_budget.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor {

/// `gpus = "auto" | [ids] | N`.
enum class gpu_kind : std::uint8_t {
  auto_detect,   ///< every CUDA device, or one host feeder without CUDA (the app resolves it)
  device_ids,    ///< the CUDA devices listed in `ids`
  host_feeders,  ///< `count` host feeders, no CUDA
};

/// Which feeders the node runs.
struct gpu_selection {
  gpu_kind kind = gpu_kind::auto_detect;
  std::vector<int> ids;  ///< device_ids only: distinct, >= 0, not empty
  int count = 0;         ///< host_feeders only: >= 1
};

/// [dataset]
struct dataset_config {
  std::string path;  ///< required: a shard directory, an image folder, or WebDataset tars
  dataset_format format = dataset_format::shards;
  /// Parts of multipart samples left in their files and read in place by the steps that need
  /// them (a CT volume's "x.npy"): core/storage/file_slice.hpp. webdataset and npy_pairs only.
  std::vector<std::string> map_parts;
  std::uint64_t seed = 0;  ///< epoch order and per-sample randomness derive from it
  shuffle_mode shuffle = shuffle_mode::global;  ///< true: global, false: none, or "blocks"
  /// blocks: bytes of consecutive records a block holds (on average: a block is a whole number
  /// of samples, api/resolve_order.hpp), 1 to 4G and not past the largest shard.
  std::uint64_t shuffle_block = 1u << 20;
  std::uint64_t shuffle_span = 256;  ///< blocks: blocks shuffled together, 1 to 2^20
};

/// [python]: a Python Dataset (dataset.format = "python"; dataset.path is the setup its loader
/// wrote: the pickled dataset and worker_init_fn, python/conveyor_worker.py's write_setup;
/// read only when the node spawns a zygote, api/resolve_python.hpp). Its
/// samples are made by worker processes the preprocessors and straggler actors lease
/// (core/python/worker_pool.hpp); their fields are those of the first sample. With a step of
/// op "python" (and any other dataset format): interpreter and the timeouts, its workers'.
struct python_config {
  std::uint64_t length = 0;                      ///< required, >= 1: len(dataset)
  std::string interpreter = "/usr/bin/python3";  ///< the trainer's sys.executable
  std::string worker;                            ///< required: the path of conveyor_worker.py
  double start_timeout_s = 120;                  ///< > 0: a worker's start (imports, unpickling)
  double hang_timeout_s = 300;                   ///< > 0: one dataset[i] at most, then killed
  /// 0 .. 2^30: bytes of a str, bytes or pickled element of one sample at most; 0: 4 times the
  /// first sample's, at least 1 MiB (python_text_room). A batch's slot has room for batch_size
  /// times this for each such element (served to a host feeder, shared memory that only what
  /// samples write takes; a GPU's slot holds and copies all of it). conveyor.DataLoader's
  /// max_object_bytes.
  std::uint64_t max_text_bytes = 0;
  /// The order the trainer's own sampler gave the node's epochs (core/python/sampler_order.hpp:
  /// little-endian uint64 dataset indices, each below length, repeats allowed): sample j of
  /// an epoch is dataset[order[j]], and an epoch has as many samples as the file indices
  /// (dataset.shuffle must be false: the sampler ordered them). "": sample j is dataset[j].
  std::string order_file;
  /// Where the node writes the first sample's layout (JSON: its structure and fields) once it
  /// has it, for the loader that rebuilds samples from batches; "" for nowhere.
  std::string layout_file;
  /// A zygote the node's starter forked (conveyor.DataLoader forks it from the trainer): the
  /// descriptors, inherited by the node, of its socket and of a pidfd of it; both or neither
  /// (-1: the node spawns its zygote from dataset.path's setup).
  int zygote_socket = -1;
  int zygote_pidfd = -1;
};

/// The value of a count given as "auto" (the app picks, e.g. one per core).
inline constexpr int auto_count = -1;

/// [pipeline]
struct pipeline_config {
  int batch_size = 64;             ///< >= 1
  int preprocessors = auto_count;  ///< auto_count (one per core) or >= 1
  int readers = auto_count;        ///< auto_count (auto_readers, api/resolve_topology.hpp) or >= 1
  int prefetch_batches = 2;        ///< 1 .. 65536: batches ready ahead of the trainer, per GPU
  int stragglers = auto_count;  ///< auto_count or >= 0 (0: none, latency_aware hands nothing off)
  /// auto_count (auto_per_worker_limit, api/resolve_topology.hpp) or >= 1: samples queued at
  /// one preprocessor
  int per_worker_limit = auto_count;
  /// auto_count (default_window in core/batching/batcher_core.hpp) or >= 1: samples in flight at
  /// most, from dispatch until the trainer releases their batch
  int window_samples = auto_count;
  double next_timeout_s = 300.0;  ///< > 0: pipeline::next() waits at most this long
  /// The node sizes itself at run time (core/analysis/autotune.hpp): the counts above are where
  /// it starts; it spawns up to twice the cores' preprocessors (and as many straggler actors,
  /// twice the auto readers) and gives work to as many as pay, within max_window_samples.
  bool autotune = false;
  /// auto_count (4 x the starting window) or >= 1: with autotune, the window's bound (the
  /// node's memory bound); not below the starting window.
  int max_window_samples = auto_count;
};

/// [batching]
struct batching_config {
  batching_policy policy = batching_policy::in_order;
  double straggler_percentile = 90.0;  ///< in (0, 100): the latency percentile of the budget
  double min_budget_ms = 5.0;          ///< >= 0: the budget never goes below this
  double handoff_share = 0.25;  ///< in [0, 1]: of the window, at most held by handed-off samples
  int straggler_backlog = 1;    ///< >= 0: samples queued at a straggler actor beyond its current
  /// latency_aware: batches of samples of one length bucket (core/batching/bucketing.hpp): the
  /// field whose extent on bucket_axis is a sample's length, checked against the chain's
  /// fields (it must vary there); "": no bucketing.
  std::string bucket_by;
  int bucket_axis = 0;  ///< >= 0, below the field's rank
  /// Given boundaries: strictly increasing, each >= 1; only with bucket_by. Empty: with
  /// bucket_by, bucket_count buckets of equal population, their boundaries learned from the
  /// lengths seen (core/batching/bucket_learner.hpp).
  std::vector<std::int64_t> bucket_boundaries;
  int bucket_count = 8;  ///< >= 2: learned buckets (MLPerf's BucketingSampler has 8)
};

/// [trainer]: the simulated trainer that stands in for a GPU.
struct trainer_config {
  double step_ms = 0.0;  ///< >= 0: time per batch
  int epochs = 1;        ///< >= 1
  /// Non-empty: every sample the trainers receive is appended as a line "<epoch> <id>" (one
  /// write per batch, so a killed run leaves whole batches), for exactly-once audits.
  std::string ids_file;
  /// >= 1: with conveyor-node --checkpoint FILE, the run's state is written to FILE every this
  /// many batches the trainers receive (over all GPUs), and at the end.
  int checkpoint_every = 100;
};

/// [monitor]
struct monitor_config {
  int interval_ms = 1000;  ///< >= 10: time between reports
  /// "host:port" where /metrics (Prometheus' text exposition) is served; "" = nowhere (the
  /// default). Only that address is listened on (core/observe/metrics_endpoint.hpp).
  std::string metrics;
};

/// [serve]: the node as the data service of trainer processes (see core/serving/).
struct serve_config {
  /// A Unix socket path (at most 107 bytes); "" = no serving: the node runs its simulated
  /// trainer instead.
  std::string socket;
  int jobs = 1;  ///< >= 1: jobs that each receive every batch (coordinated prep)
  /// The socket file's permission bits; the owner's read and write are required. 0600: only
  /// the node's own user can attach.
  unsigned mode = 0600;
  /// The node starts its pipeline once a client of every rank has attached, from the union of
  /// the resume states they attached with (client_options::resume): a restarted job goes on
  /// exactly where its trainers' checkpoints were. False: the pipeline starts at once.
  bool resume = false;
  /// Connections at most, attached or not; 0: 4 x jobs x ranks. A full house closes the oldest
  /// connection that has not attached to make room for a new one.
  int max_sessions = 0;
  /// > 0: a connection that has not attached after this long is closed.
  double attach_timeout_s = 10.0;
  /// A file holding the key the node signs its clients' resume states with (made on first use,
  /// mode 0600); with one, the node resumes only from states it signed. "": states unsigned.
  std::string state_key_file;
  /// Once every job released every epoch, go on answering its clients (report, state) until
  /// stopped (a signal, its --owner's end) instead of ending: conveyor.DataLoader's node of one
  /// epoch (a sampler's own order) is asked for its report after that epoch.
  bool linger = false;
  /// True when trainer processes attach instead of the simulated trainer.
  bool enabled() const noexcept { return !socket.empty(); }
};

/// [cache]: CoorDL's MinIO cache of encoded samples (core/storage/minio_cache.hpp).
struct cache_config {
  std::uint64_t memory = 0;  ///< bytes of samples kept in memory; 0: none
  /// A directory on a local disk for the cache's disk tier (samples past `memory`); "": none.
  std::string disk;
  std::uint64_t disk_size = 0;  ///< bytes of the disk tier; > 0 exactly when `disk` is set
  bool enabled() const noexcept { return memory > 0 || disk_size > 0; }
};

/// How a cluster splits each epoch among its nodes (core/batching/epoch_share.hpp).
enum class shard_by : std::uint8_t { sample, shard };

/// [cluster]: this node's place among the nodes of one job.
struct cluster_config {
  std::optional<int> rank;   ///< >= 0, < world; unset: $RANK (conveyor-node), else 0
  std::optional<int> world;  ///< >= 1; unset: $WORLD_SIZE (conveyor-node), else 1
  shard_by split = shard_by::sample;
  /// Every node's address in rank order, this node's own at `rank` (where it listens): the
  /// nodes' caches serve each other's misses (the partitioned cache). Distinct; empty: they
  /// do not. When set, world must equal its size.
  std::vector<peer_address> peers;
  int peer_timeout_ms = 1000;  ///< >= 1: a fetch from a peer, and each step of connecting
  int peer_retry_ms = 2000;    ///< >= 1: a peer that failed is asked again after this long
  double peer_wait_s = 60.0;   ///< >= 0: start waits this long at most for every peer
  tls_files tls;               ///< tls_certificate, tls_key, tls_cafile
  /// Plain TCP (no tls) to peers beyond the loopback interface is accepted only when set: CAF
  /// 0.17 lets anyone who reaches the port make the node allocate up to 4 GiB per connection.
  bool insecure = false;
  /// A file holding the run's secret, with which the nodes prove their ranks to each other
  /// (core/cluster/run_secret.hpp): a regular file that its group and others may not read or
  /// write, not empty; "": ranks are taken on their word.
  std::string secret_file;
  int rank_or_default() const noexcept { return rank.value_or(0); }
  int world_or_default() const noexcept { return world.value_or(1); }
  bool partitioned() const noexcept { return !peers.empty(); }
};

/// [supervision]
struct supervision_config {
  restart_strategy strategy = restart_strategy::one_for_one;
  int max_restarts = 5;            ///< >= 0 restarts within restart_period_s, then escalate
  double restart_period_s = 10.0;  ///< > 0
  double backoff_min_ms = 10.0;    ///< >= 0
  double backoff_max_ms = 1000.0;  ///< >= backoff_min_ms
  int max_sample_retries = 2;      ///< >= 0, then the sample is quarantined
  int hang_timeout_ms = 30000;     ///< >= 0; 0 turns hang detection off
  std::string quarantine_report;   ///< a file to write quarantined samples to; "" = none
};

/// [plugins]: shared libraries of user steps (include/conveyor/step.hpp) the node loads before
/// it reads its [[transform]] tables (core/transforms/plugin_loader.hpp).
struct plugins_config {
  std::vector<std::string> libraries;  ///< paths, loaded in order
};

/// [faults]: injected failures for tests and demos; all off by default.
struct fault_config {
  double crash_preprocessor = 0.0;  ///< probability in [0, 1], per sample
  double crash_reader = 0.0;        ///< probability in [0, 1], per read
  double crash_straggler = 0.0;     ///< probability in [0, 1], per sample
  double delay_ms = 0.0;            ///< >= 0: extra time of a delayed sample
  double delay_probability = 0.0;   ///< probability in [0, 1], per sample
  double read_error = 0.0;          ///< probability in [0, 1], per read
  std::uint64_t seed = 0;           ///< >= 0
  /// The feeders' copies to the device, numbered from 1 per GPU: this one faults as a device
  /// would (a sticky error), or never completes; each takes copy_delay_ms longer. A threaded
  /// host engine stands in for the device: host feeders only. 0: none.
  std::uint64_t copy_fault = 0;
  std::uint64_t copy_stall = 0;
  double copy_delay_ms = 0.0;  ///< >= 0

  /// True when a copy fault or delay is injected.
  bool copy_faults() const noexcept;

  /// True when any fault can happen.
  bool enabled() const noexcept;
};

/// The element type normalize writes (`dtype` of the normalize transform).
enum class output_dtype : std::uint8_t { float32, bfloat16 };

/// A whole node.
/// [s3]: how the node reaches an object store, for a dataset.path of "s3://bucket/prefix"
/// (core/remote/s3_settings.hpp).
using s3_config = s3_settings;

struct topology {
  std::string source;  ///< where it was loaded from (file name or source name), for logs
  gpu_selection gpus;
  dataset_config dataset;
  pipeline_config pipeline;
  batching_config batching;
  trainer_config trainer;
  monitor_config monitor;
  serve_config serve;
  cache_config cache;
  s3_config s3;
  python_config python;
  cluster_config cluster;
  supervision_config supervision;
  fault_config faults;
  plugins_config plugins;
  /// The [[transform]] tables in order; not empty, accepted by transform_chain::build. Empty
  /// for a Python Dataset, whose __getitem__ is the whole chain.
  std::vector<transform_spec> transforms;
  /// [collate.<field>]: how a batch carries each field named there (the others: stack), each
  /// checked against the chain's fields (a field no step makes is an error).
  std::vector<std::pair<std::string, collate_spec>> collate;
  /// normalize's `on = "gpu"`: the chain still ends with its normalize spec; a CUDA feeder
  /// that honours this runs it on the GPU instead.
  bool normalize_on_gpu = false;
  /// normalize's `dtype`; bfloat16 requires normalize_on_gpu.
  output_dtype normalize_dtype = output_dtype::float32;
};

/// The configuration spelling of each value, e.g. "latency_aware".
std::string_view to_string(dataset_format format) noexcept;
std::string_view to_string(shard_by split) noexcept;
std::string_view to_string(s3_addressing addressing) noexcept;
std::string_view to_string(output_dtype type) noexcept;
std::string_view to_string(interpolation interp) noexcept;
std::string_view to_string(resample_method method) noexcept;

/// One line per section ("pipeline: batch_size=64 ..."), for the startup log. Pure.
std::string describe(const topology& node);

}  // namespace conveyor
