#pragma once
/// Embedding Conveyor in a C++ trainer. Open a pipeline from a topology (a TOML file or text;
/// config/default.toml, installed as share/conveyor/default.toml, documents every key), then
/// pull each GPU's batches, one thread per GPU as a data-parallel job does:
///
///   auto p = conveyor::pipeline::open("node.toml");           // expected<pipeline>
///   for (std::uint64_t e = 0; e < p->epochs(); ++e)
///     for (auto& batch : p->epoch(e, gpu)) train(batch.tensor(), batch.labels());
///
/// Every sample of an epoch reaches exactly one GPU exactly once (or is quarantined, see
/// report()). A batch gives its buffer back when it is destroyed or released; the pipeline
/// prepares at most `pipeline.prefetch_batches` batches ahead of each GPU, so a trainer that
/// holds batches slows the loader down instead of growing its memory. A GPU has
/// `prefetch_batches + 1` buffers: a trainer that holds all of them (gradient accumulation
/// over more batches than that) gets errc::resource_exhausted from next(), never a hang. A
/// batch counts as held until it is released, even while another thread is about to release
/// it (after a CUDA event, say): such a trainer keeps at most `prefetch_batches` batches out
/// when it calls next(), or raises prefetch_batches. An end-of-epoch marker that next() returns
/// holds its buffer too until it is released (epoch ranges release markers themselves). Each
/// GPU's batches must be consumed concurrently (one thread per GPU): the GPUs advance together,
/// and next() gives up with errc::timed_out after `pipeline.next_timeout_s`.
/// Destroying the pipeline stops it cleanly, also in the middle of an epoch.
///
/// Process-wide effects, while a pipeline is open: OpenCV's own thread pool is off
/// (cv::setNumThreads(0); the trainer's setting is restored when the last pipeline is
/// destroyed), because the preprocessors already use every core. Conveyor's log lines go to
/// stderr unless conveyor/log.hpp routes them elsewhere; spdlog's registry, default logger and
/// level are left alone. Nothing else: no signal handlers, no environment, no working directory.

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conveyor/batch.hpp"
#include "conveyor/dtype.hpp"
#include "conveyor/error.hpp"
#include "conveyor/run_state.hpp"

namespace conveyor {

struct topology;
class pipeline_runtime;
struct pipeline_opening;

/// How a pipeline was set up, with every "auto" resolved.
struct pipeline_info {
  int gpus = 1;
  int preprocessors = 1;
  int readers = 1;
  std::uint64_t epochs = 1;
  std::uint64_t dataset_size = 0;
  std::uint64_t batch_size = 0;
  std::uint64_t prefetch_batches = 0;  ///< a GPU has prefetch_batches + 1 buffers
  std::uint64_t window_samples = 0;    ///< samples in flight at most, dispatch to release
  std::string policy;                  ///< "in_order" or "latency_aware"
  /// The dataset's classes: label i is class_names[i] (an image folder's sub-directories, or
  /// the classes a shard set was packed with).
  std::vector<std::string> class_names;
  double next_timeout_s = 0;  ///< next() gives up after this long
  /// The epoch every GPU starts in: 0, or the first epoch a resumed run had not finished (the
  /// epochs before it are complete; epoch() of one of them is an empty range).
  std::uint64_t start_epoch = 0;
  /// Samples a resumed run had delivered before it stopped (over every epoch); 0 otherwise.
  std::uint64_t delivered_before = 0;
  std::uint64_t seed = 0;  ///< dataset.seed: of the epoch order and the random transforms
  /// dataset.shuffle: "global", "blocks" or "none"; blocks: shuffle_block samples a block
  /// (dataset.shuffle_block's bytes, resolved on the dataset), shuffle_span blocks a span.
  std::string shuffle = "global";
  std::uint64_t shuffle_block = 0;
  std::uint64_t shuffle_span = 0;
  /// Samples this pipeline delivers each epoch: dataset_size, or its node's share of a cluster
  /// ([cluster]: rank, world).
  std::uint64_t epoch_samples = 0;
  /// The port /metrics and the live page are served on ([monitor] metrics; the port the
  /// system picked when it said port 0); 0: not served.
  std::uint16_t metrics_port = 0;

  std::size_t classes() const noexcept { return class_names.size(); }
};

/// Movable, not copyable. next() and epoch() are thread-safe across GPUs (one thread per GPU);
/// the other calls are thread-safe.
class pipeline {
 public:
  /// Loads a topology file (with `key=value` overrides, as conveyor-node --set) and starts.
  /// errc::invalid_config (or not_found) naming the file, line and key on bad input.
  static expected<pipeline> open(const std::filesystem::path& topology_file,
                                 const std::vector<std::string>& overrides = {});
  /// The same from a TOML document in memory; messages name it "<string>".
  static expected<pipeline> from_toml(std::string_view toml,
                                      const std::vector<std::string>& overrides = {});
  /// The same, resuming a run from `resume` (a state() of it, conveyor/run_state.hpp):
  /// exactly the samples of each epoch the trainer had not received, then the later epochs.
  /// errc::corrupt_shard / checksum_mismatch / invalid_argument for bytes that are not a sound
  /// state, errc::invalid_config naming the key (dataset, seed, shuffle, epochs) for a state of
  /// another run. The topology may change otherwise (GPUs, batch size, policy, workers).
  static expected<pipeline> open(const std::filesystem::path& topology_file,
                                 const std::vector<std::string>& overrides,
                                 const run_state& resume);
  static expected<pipeline> from_toml(std::string_view toml,
                                      const std::vector<std::string>& overrides,
                                      const run_state& resume);

  pipeline(pipeline&&) noexcept;
  pipeline& operator=(pipeline&&) noexcept;
  ~pipeline();

  int gpus() const noexcept;
  std::uint64_t epochs() const noexcept;
  std::uint64_t dataset_size() const noexcept;
  pipeline_info info() const;

  /// The next batch of `gpu`, waiting until there is one. Errors:
  /// - errc::not_found: no more batches (after the GPU's last epoch, or after shutdown());
  /// - errc::resource_exhausted, at once: the trainer holds every buffer of this GPU, so
  ///   nothing can arrive until it releases one;
  /// - errc::timed_out: no batch within `pipeline.next_timeout_s` (e.g. another GPU's batches
  ///   are not consumed, and the GPUs advance together);
  /// - errc::invalid_argument: `gpu` is not one of this pipeline's;
  /// - the fatal error that stopped the pipeline (see failure()).
  expected<batch> next(int gpu);
  /// The same, waiting at most `wait` instead of `pipeline.next_timeout_s`: errc::timed_out
  /// then says only that nothing came within `wait`, and the call may be repeated. For callers
  /// that must stay responsive while they wait (Ctrl-C in Python: conveyor.Pipeline).
  expected<batch> next_for(int gpu, std::chrono::milliseconds wait);

  /// The batches of epoch `epoch` for `gpu` as a range (conveyor/batch.hpp says how it
  /// behaves). `epoch` must be the epoch the GPU is in.
  using epoch_range = conveyor::epoch_range;
  epoch_range epoch(std::uint64_t epoch, int gpu);

  /// Where the run stands: what every GPU's next() has returned so far (whether released or
  /// not). Take it where the trainer checkpoints its model, with no batch in between, and open
  /// the pipeline with it to go on from exactly there. Thread-safe.
  run_state state() const;

  pipeline_report report() const;
  /// The fatal error that stopped the pipeline, if one did.
  std::optional<error> failure() const;
  /// Stops every actor; batches still held stay readable until destroyed. Idempotent.
  void shutdown();

 private:
  struct shared_state;
  struct gpu_stream;
  friend expected<pipeline> create_pipeline(const topology& t, pipeline_opening how);
  explicit pipeline(std::shared_ptr<pipeline_runtime> runtime);
  static expected<batch> next_of(shared_state& s, int gpu, std::chrono::milliseconds wait);

  std::shared_ptr<shared_state> state_;
};

}  // namespace conveyor
