#pragma once
/// A running pipeline: the actor system and every actor of one node (readers, preprocessors,
/// batcher, one feeder per GPU, monitor), wired together. Trainers take batches from
/// status()->channel(gpu) and give them back with release(). Destruction stops everything,
/// also in the middle of an epoch, and waits for every actor to finish.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "actors/supervisor.hpp"
#include "core/analysis/autotune.hpp"
#include "core/batching/batch_policy.hpp"
#include "core/batching/batcher_core.hpp"
#include "core/batching/quarantine_report.hpp"
#include "core/cluster/peer_address.hpp"
#include "core/cluster/run_secret.hpp"
#include "core/cluster/tls_files.hpp"
#include "core/delivery/client_waits.hpp"
#include "core/delivery/pipeline_status.hpp"
#include "core/feeding/host_copy_engine.hpp"
#include "core/storage/minio_cache.hpp"
#include "core/storage/sample_source.hpp"
#include "core/supervision/fault_injector.hpp"
#include "core/transforms/transform_chain.hpp"

namespace conveyor {

/// [cluster] peers: this node among nodes whose caches serve each other's misses (the
/// partitioned cache). The cache's plan says which node holds which sample.
struct peer_settings {
  std::vector<peer_address> nodes;  ///< every node in rank order; this node listens at its own
  std::uint64_t rank = 0;
  std::chrono::milliseconds fetch_timeout{1000};  ///< a fetch, and each step of connecting
  std::chrono::milliseconds retry{2000};          ///< a peer that failed is asked again after
  std::chrono::milliseconds wait{60000};          ///< reading waits this long for every peer
  tls_files tls{};                                ///< none: plain TCP
  int server_workers = 1;  ///< threads that serve the peers' fetches (storage reads for them)
  run_secret secret{};     ///< the proof of rank in hellos; none: ranks taken on their word
};

/// pipeline.autotune: where the autotuner starts, its bounds (the spec's counts are the most,
/// the workers spawned) and its settings (actors/autotuner.hpp).
struct autotune_plan {
  analysis::tuning start;
  analysis::tuning least;
  analysis::tuning most;
  analysis::autotune_settings settings{};
};

struct pipeline_spec {
  std::shared_ptr<const sample_source> source;
  transform_chain chain;
  /// The chain's fields with their collates (the topology's [collate]): what every prepared
  /// sample must fit.
  std::shared_ptr<const sample_schema> schema;
  /// The same as a batch's buffer holds them: the field that collate_normalize normalises is
  /// float32 there.
  std::shared_ptr<const sample_schema> batch_schema;
  /// dataset_size is taken from `source`; window_samples, when 0, becomes
  /// default_window(prefetch_batches, policy, settings).
  batcher_settings settings;
  batching_policy policy = batching_policy::in_order;
  int readers = 1;
  int stragglers = 0;  ///< straggler actors; used when settings.hand_off is set
  std::uint64_t prefetch_batches = 2;
  /// pipeline::next() waits at most this long for a batch.
  std::chrono::milliseconds next_timeout{300000};
  std::chrono::milliseconds monitor_interval{1000};  ///< 0: no monitor reports
  int scheduler_threads = 2;  ///< CAF threads for the light actors (batcher, feeders, monitor)
  // Members below have {} so that aggregate initialisation naming only the first ones stays
  // clean under -Wmissing-field-initializers (the CI build is -Werror).
  supervision_settings supervision{};  ///< of readers, preprocessors and straggler actors
  fault_plan faults{};                 ///< injected failures (drills and tests); none by default
  std::shared_ptr<quarantine_report> quarantine{};  ///< null: no report file
  /// The CUDA device of each GPU slot (CUDA feeders); empty: host feeders serve the slots.
  std::vector<int> cuda_devices{};
  /// The field gpu_normalize and collate_normalize apply to (its index in `schema`).
  std::size_t normalize_field = 0;
  /// normalize run by the CUDA feeders on uint8 samples (on = "gpu"), into gpu_normalize_type.
  std::optional<normalize_spec> gpu_normalize{};
  dtype gpu_normalize_type = dtype::float32;
  /// normalize run by every feeder on the CPU as it writes uint8 samples (the chain ends with
  /// to_uint8) into a batch, to float32 (feeder_options::collate_normalize). Not with
  /// gpu_normalize.
  std::optional<normalize_spec> collate_normalize{};
  /// Per GPU slot, memory its host feeder collates into (prefetch_batches + 1 buffers each):
  /// a shared-memory feed's slots. Empty: each feeder owns its buffers. Set only with host
  /// feeders (cuda_devices empty).
  std::vector<external_slots> feed_memory{};
  /// The host feeders' copy engine (tests: threaded, with delays and injected faults); unset:
  /// inline and in place, the host feeder's own.
  std::optional<host_engine_options> host_engine{};
  /// [cache]: the MinIO cache the readers read through; null: none.
  std::shared_ptr<minio_cache> cache{};
  /// Set: the node serves its cache to its peers and fetches theirs (needs `cache`).
  std::optional<peer_settings> peers{};
  /// Set: the node sizes itself (pipeline.autotune); the counts above are its bounds.
  std::optional<autotune_plan> autotune{};
  /// Set ([monitor] metrics): /metrics served there while the pipeline runs (port 0: one the
  /// system picks, metrics_port()). Needs monitor reports for the actors' figures.
  std::optional<peer_address> metrics{};
  /// A served node's trainer processes' waits, for /metrics; null: not served.
  std::shared_ptr<const client_waits> served_waits{};
};

/// Thread-safe: release() may be called from any trainer thread.
class pipeline_runtime {
 public:
  explicit pipeline_runtime(pipeline_spec spec);
  ~pipeline_runtime();
  pipeline_runtime(const pipeline_runtime&) = delete;
  pipeline_runtime& operator=(const pipeline_runtime&) = delete;

  const std::shared_ptr<pipeline_status>& status() const noexcept;
  const pipeline_spec& spec() const noexcept;
  /// Gives buffer `slot` of GPU `gpu` back to its feeder: true when the trainer held it, false
  /// (and nothing sent) for a second release of the same buffer. Idempotent per buffer.
  bool release(int gpu, std::uint64_t slot);
  /// Stops every actor and closes the channels; idempotent. The destructor calls it.
  void stop();
  /// Where /metrics is served (spec.metrics); 0: nowhere.
  std::uint16_t metrics_port() const noexcept;
  /// Why the pipeline could not start (its peer server or its metrics endpoint could not
  /// listen, naming cluster.peers or monitor.metrics); nullopt when it started.
  const std::optional<error>& startup_error() const noexcept;
  /// Every peer that failed during the run, "host:port (rank r): what happened"; empty
  /// without peers.
  std::vector<std::string> failed_peers() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace conveyor
