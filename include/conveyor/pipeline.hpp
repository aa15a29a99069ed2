#pragma once
/// Embedding Conveyor in a C++ trainer. Build a pipeline from a topology (a TOML file or a
/// `conveyor::topology` struct from config/topology.hpp), then pull each GPU's batches, one
/// thread per GPU as a data-parallel job does:
///
///   auto p = conveyor::pipeline::open("node.toml");           // expected<pipeline>
///   for (std::uint64_t e = 0; e < p->epochs(); ++e)
///     for (auto& batch : p->epoch(e, gpu)) train(batch.tensor(), batch.labels());
///
/// Every sample of an epoch reaches exactly one GPU exactly once (or is quarantined, see
/// report()). A batch gives its buffer back when it is destroyed or released; the pipeline
/// prepares at most `pipeline.prefetch_batches` batches ahead of each GPU, so a trainer that
/// holds batches slows the loader down instead of growing its memory. Each GPU's batches must
/// be consumed concurrently (one thread per GPU): the GPUs advance together.
/// Destroying the pipeline stops it cleanly, also in the middle of an epoch.

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/error.hpp"
#include "core/tensor.hpp"

namespace conveyor {

struct topology;
struct host_batch;
class pipeline_runtime;

/// A read-only view of a batch tensor: N x C x H x W elements of `type` (float32; bfloat16 or
/// uint8 as the topology says), contiguous. From a CUDA feeder, `data` is device memory and
/// is complete when the batch is handed out; release the batch only after the trainer's own
/// GPU work that reads it has finished (the next copy into that memory is queued on the
/// feeder's stream).
struct tensor_view {
  dtype type = dtype::float32;
  std::array<std::int64_t, 4> shape{0, 0, 0, 0};
  const void* data = nullptr;
  int device = -1;  ///< -1: host memory; otherwise the CUDA device holding `data`

  std::size_t bytes() const noexcept;
};

/// One batch of one GPU. Move-only; not thread-safe (one trainer thread holds it).
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
  /// Gives the buffer back now; the batch is empty afterwards. Idempotent.
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
  std::uint64_t prefetch_batches = 0;
  std::uint64_t window_samples = 0;  ///< samples in flight at most, dispatch to release
  std::string policy;                ///< "in_order" or "latency_aware"
};

/// What the pipeline's own ledger says so far.
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

class pipeline {
 public:
  /// Loads a topology file (with `key=value` overrides, as conveyor-node --set) and starts.
  /// errc::invalid_config (or not_found) naming the file, line and key on bad input.
  static expected<pipeline> open(const std::filesystem::path& topology_file,
                                 const std::vector<std::string>& overrides = {});
  /// Starts from a topology already loaded.
  static expected<pipeline> create(const topology& t);

  pipeline(pipeline&&) noexcept;
  pipeline& operator=(pipeline&&) noexcept;
  ~pipeline();

  int gpus() const noexcept;
  std::uint64_t epochs() const noexcept;
  std::uint64_t dataset_size() const noexcept;
  pipeline_info info() const;

  /// The next batch of `gpu` (blocking until there is one). After the GPU's last epoch, or once
  /// the pipeline has stopped, an error: errc::not_found for "no more batches", or the fatal
  /// error that stopped the pipeline. Thread-safe across GPUs; one thread per GPU.
  expected<batch> next(int gpu);

  /// The batches of epoch `epoch` for `gpu` as a range; `epoch` must be the GPU's next epoch.
  /// The range ends after the epoch's last batch (an empty end marker is not yielded), or
  /// early if the pipeline stops: then `failure()` says why.
  class epoch_range;
  epoch_range epoch(std::uint64_t epoch, int gpu);

  pipeline_report report() const;
  /// The fatal error that stopped the pipeline, if one did.
  std::optional<error> failure() const;
  /// Stops every actor; batches still held stay readable until destroyed. Idempotent.
  void shutdown();

 private:
  explicit pipeline(std::shared_ptr<pipeline_runtime> runtime);
  std::shared_ptr<pipeline_runtime> runtime_;
  /// Epochs each GPU has finished; element g is touched only by GPU g's thread.
  std::vector<std::uint64_t> epochs_ended_;
};

class pipeline::epoch_range {
 public:
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = batch;
    using difference_type = std::ptrdiff_t;
    using pointer = batch*;
    using reference = batch&;

    batch& operator*() noexcept { return range_->current_; }
    batch* operator->() noexcept { return &range_->current_; }
    iterator& operator++();
    bool operator==(const iterator& o) const noexcept { return at_end() == o.at_end(); }
    bool operator!=(const iterator& o) const noexcept { return !(*this == o); }

   private:
    friend class epoch_range;
    explicit iterator(epoch_range* range) : range_(range) {}
    bool at_end() const noexcept { return range_ == nullptr || range_->done_; }
    epoch_range* range_;
  };

  iterator begin();
  iterator end() noexcept { return iterator(nullptr); }

 private:
  friend class pipeline;
  epoch_range(pipeline* owner, std::uint64_t epoch, int gpu)
      : owner_(owner), epoch_(epoch), gpu_(gpu) {}
  void advance();

  pipeline* owner_;
  std::uint64_t epoch_;
  int gpu_;
  batch current_;
  bool started_ = false;
  bool done_ = false;
  bool saw_last_ = false;
};

}  // namespace conveyor
