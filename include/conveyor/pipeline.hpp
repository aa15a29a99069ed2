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
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conveyor/dtype.hpp"
#include "conveyor/error.hpp"

namespace conveyor {

struct topology;
struct host_batch;
class pipeline_runtime;

/// A view of a batch tensor: N x C x H x W elements of `type` (float32; bfloat16 or uint8 as
/// the topology says), contiguous, row-major. The memory belongs to the batch: it may be read
/// and written (in-place work, zero-copy wrapping such as `torch::from_blob(v.data, ...)`)
/// until the batch is released. From a CUDA feeder, `data` is device memory and is complete
/// when the batch is handed out; release the batch only after the trainer's own GPU work that
/// reads it has finished (the next copy into that memory is queued on the feeder's stream).
struct tensor_view {
  dtype type = dtype::float32;
  std::array<std::int64_t, 4> shape{0, 0, 0, 0};
  void* data = nullptr;
  int device = -1;  ///< -1: host memory; otherwise the CUDA device holding `data`

  std::size_t elements() const noexcept;
  std::size_t bytes() const noexcept;
};

/// One batch of one GPU. Move-only; not thread-safe (one thread at a time holds it; it may be
/// handed to another thread, e.g. to release it once the GPU is done with it).
class batch {
 public:
  batch() = default;
  batch(batch&& other) noexcept = default;
  batch& operator=(batch&& other) noexcept;
  batch(const batch&) = delete;
  batch& operator=(const batch&) = delete;
  ~batch();

  tensor_view tensor() const noexcept;
  const std::vector<std::int32_t>& labels() const noexcept;
  const std::vector<std::uint64_t>& sample_ids() const noexcept;
  /// Each sample's file, or shard and record.
  const std::vector<std::string>& keys() const noexcept;
  std::uint64_t epoch() const noexcept;
  int gpu() const noexcept;
  std::size_t size() const noexcept;
  /// This is the last batch of its epoch for its GPU (it may be empty: then it only marks the
  /// end).
  bool last_in_epoch() const noexcept;
  /// Gives the buffer back now; the batch is empty afterwards. Idempotent: a second call, or a
  /// call after the pipeline is gone, does nothing.
  void release() noexcept;

 private:
  friend class pipeline;
  batch(std::shared_ptr<const host_batch> data, std::shared_ptr<pipeline_runtime> runtime);

  std::shared_ptr<const host_batch> data_;
  std::shared_ptr<pipeline_runtime> runtime_;
};

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

  std::size_t classes() const noexcept { return class_names.size(); }
};

/// What the pipeline's own ledger says so far. Live: it counts every batch handed to a
/// trainer by the time the trainer holds it.
struct pipeline_report {
  std::uint64_t delivered = 0;    ///< sample deliveries over all epochs
  std::uint64_t quarantined = 0;  ///< samples set aside
  std::uint64_t duplicates = 0;   ///< must be 0
  std::uint64_t lost = 0;         ///< samples of begun epochs not yet accounted for
  std::uint64_t peak_in_flight = 0;
  std::uint64_t handoffs = 0;        ///< samples finished by straggler actors
  std::uint64_t early_handoffs = 0;  ///< of those, handed off from the header, before decode
  std::uint64_t steps_executed = 0;  ///< transform steps run: samples x steps when none is redone
  std::uint64_t retries = 0;         ///< samples issued again: after a failure or a worker's death
  std::uint64_t restarts = 0;        ///< workers restarted by their supervisors
  std::uint64_t hangs = 0;           ///< workers declared hung (supervision.hang_timeout_ms)
  /// Where a sample's time goes, in mean milliseconds per sample: "read", each transform step
  /// by its op name, and "collate" (the copy into the batch). Wall time of the work itself;
  /// the rest of a sample's latency is queueing and messaging.
  std::vector<std::pair<std::string, double>> time_per_sample_ms;
  bool finished = false;                         ///< every epoch handed to the GPUs
  std::vector<std::string> quarantined_samples;  ///< "epoch <e> <key>: <reason>"
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

  /// The batches of epoch `epoch` for `gpu` as a range. Nothing is ever dropped: leaving the
  /// loop early (break) leaves the rest of the epoch for the next epoch(epoch, gpu) or next(gpu)
  /// call. `epoch` must be the epoch the GPU is in; otherwise the range is empty and its
  /// error() says which epoch that is (nothing is consumed). The range holds the batch it is
  /// at until it moves on or is destroyed: after a break, let a named range go before the next
  /// call (it would hold one buffer). The range and its iterators stay valid when the pipeline
  /// is moved; once it is shut down or destroyed they end with an error.
  class epoch_range;
  epoch_range epoch(std::uint64_t epoch, int gpu);

  pipeline_report report() const;
  /// The fatal error that stopped the pipeline, if one did.
  std::optional<error> failure() const;
  /// Stops every actor; batches still held stay readable until destroyed. Idempotent.
  void shutdown();

 private:
  struct state;
  friend expected<pipeline> create_pipeline(const topology& t);  // api/create_pipeline.hpp
  explicit pipeline(std::shared_ptr<pipeline_runtime> runtime);
  static expected<batch> next_of(state& s, int gpu);

  std::shared_ptr<state> state_;
};

class pipeline::epoch_range {
  struct cursor;  // the range's state, shared by the range and its iterators

 public:
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = batch;
    using difference_type = std::ptrdiff_t;
    using pointer = batch*;
    using reference = batch&;

    iterator() = default;  ///< the end iterator
    batch& operator*() const noexcept;
    batch* operator->() const noexcept { return &**this; }
    iterator& operator++();
    bool operator==(const iterator& o) const noexcept { return at_end() == o.at_end(); }
    bool operator!=(const iterator& o) const noexcept { return !(*this == o); }

   private:
    friend class epoch_range;
    explicit iterator(std::shared_ptr<cursor> at) : at_(std::move(at)) {}
    bool at_end() const noexcept;
    std::shared_ptr<cursor> at_;  ///< null: the end iterator
  };

  iterator begin();
  iterator end() noexcept { return iterator(nullptr); }
  /// Why the range ended before the epoch's last batch (the epoch was out of turn, or the
  /// pipeline stopped or failed); empty while it runs, after a complete epoch, and after a
  /// break.
  std::optional<conveyor::error> error() const;
  /// The epoch's last batch was reached.
  bool complete() const noexcept;

 private:
  friend class pipeline;
  explicit epoch_range(std::shared_ptr<cursor> at) : at_(std::move(at)) {}
  std::shared_ptr<cursor> at_;
};

}  // namespace conveyor
