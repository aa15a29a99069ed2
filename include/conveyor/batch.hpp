#pragma once
/// The batch API that a trainer sees, whichever transport brings its batches: a pipeline in
/// the trainer's own process (conveyor/pipeline.hpp) or a node it attached to
/// (conveyor/client.hpp). One batch of one GPU (rank) at a time: its named fields (README
/// "Samples: named fields"), the ids and keys of its samples, and the batches of one epoch as
/// a range:
///
///   for (auto& batch : source.epoch(e, ...)) train(batch.tensor(), batch.labels());
///   for (auto& batch : source.epoch(e, ...)) {                 // any recipe
///     auto audio = batch.field("features");                    // N x T x 240 float32, padded
///     const std::int32_t* frames = audio->lengths;             // each sample's own T
///   }

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conveyor/dtype.hpp"
#include "conveyor/error.hpp"

struct CUstream_st;  // the CUDA runtime's stream: cudaStream_t is CUstream_st*

namespace conveyor {

/// A CUDA stream, as cudaStream_t (no CUDA header needed); nullptr is the legacy default
/// stream (stream 0 of code built without --default-stream per-thread).
using cuda_stream_t = CUstream_st*;

struct host_batch;
class batch_home;
class batch_stream;
struct batch_access;

/// A view of a batch tensor: N x C x H x W elements of `type` (float32; bfloat16 or uint8 as
/// the topology says), contiguous, row-major. The memory belongs to the batch: it may be read
/// (and, where the batch says writable(), written: in-place work, zero-copy wrapping such as
/// `torch::from_blob(v.data, ...)`) until the batch is released. From a CUDA feeder, `data` is
/// memory of CUDA device `device`, complete when the batch is handed out (see batch for the
/// rule of its release).
struct tensor_view {
  dtype type = dtype::float32;
  std::array<std::int64_t, 4> shape{0, 0, 0, 0};
  void* data = nullptr;
  int device = -1;  ///< -1: host memory; otherwise the CUDA device holding `data`

  std::size_t elements() const noexcept;
  std::size_t bytes() const noexcept;
};

/// How a batch carries a field: `stack`ed (every sample one shape: N x shape), `pad`ded to the
/// batch's largest extent along each axis that varies (with each sample's own extents in
/// `lengths`), or `ragged` (the samples' rows one after another, sample i at rows offsets[i] ..
/// offsets[i + 1]).
enum class collate : std::uint8_t { stack = 0, pad = 1, ragged = 2 };

/// One field of a batch. `shape` has `rank` dimensions, the first the batch's: samples for
/// stack and pad, rows of all samples for ragged. `data` is the field's memory, contiguous and
/// row-major, valid (and writable where the batch is) until the batch is released; device
/// memory of CUDA device `device` from a CUDA feeder, host memory otherwise. `lengths`
/// (pad: int32 [samples, length_axes], each sample's extent along each padded axis, in axis
/// order) and `offsets` (ragged: int64 [samples + 1]) are in host memory whatever `device` is.
/// `bytes` fields hold byte strings (a transcript): uint8, ragged or padded, one per sample.
struct field_view {
  std::string_view name;
  dtype type = dtype::uint8;
  bool bytes = false;
  collate mode = collate::stack;
  int rank = 0;
  std::array<std::int64_t, 5> shape{};
  void* data = nullptr;
  int device = -1;
  std::size_t samples = 0;
  const std::int32_t* lengths = nullptr;
  int length_axes = 0;
  const std::int64_t* offsets = nullptr;

  std::size_t elements() const noexcept;
  std::size_t byte_count() const noexcept;
};

/// One batch of one GPU. Move-only; not thread-safe (one thread at a time holds it; it may be
/// handed to another thread). Held, it owns its memory: it stays readable until the batch is
/// released, also after its pipeline or client is shut down or destroyed.
///
/// Device batches (tensor().device >= 0) are released in the order of the trainer's GPU work:
/// the release records an event on a CUDA stream, and the feeder's next copy into that memory
/// waits for the event on the GPU. Nothing blocks, and the trainer need not synchronise first:
///
///   auto b = p.next(gpu);                          // complete on the device
///   my_kernel<<<grid, block, 0, stream>>>(b->tensor().data, ...);   // queued, not yet run
///   b->release_after(stream);                      // reuse waits for my_kernel
///
/// release() (and the destructor, and an epoch range moving on) is release_after(nullptr):
/// right for work queued on the legacy default stream (PyTorch's default). Work on any other
/// stream must be released with that stream (or have completed), or the next copy may
/// overwrite memory its kernels still read. Host batches ignore the stream.
class batch {
 public:
  batch() = default;
  batch(batch&& other) noexcept = default;
  batch& operator=(batch&& other) noexcept;
  batch(const batch&) = delete;
  batch& operator=(const batch&) = delete;
  ~batch();

  /// The "image" field as an N x C x H x W tensor (the image recipe's); an empty view when the
  /// batch has no 4-dimensional "image" field.
  tensor_view tensor() const noexcept;
  /// The field named `name`; nullopt when the batch has none.
  std::optional<field_view> field(std::string_view name) const noexcept;
  /// Every field, in the order the topology's steps made them.
  std::vector<field_view> fields() const;
  /// The tensor's memory may be written. False for a batch that a node shares between several
  /// jobs (serve.jobs > 1): every job reads the same memory.
  bool writable() const noexcept;
  /// The "label" field (int32, one per sample), when the batch has one; empty otherwise.
  const std::vector<std::int32_t>& labels() const noexcept;
  const std::vector<std::uint64_t>& sample_ids() const noexcept;
  /// Each sample's file, or shard and record.
  const std::vector<std::string>& keys() const noexcept;
  std::uint64_t epoch() const noexcept;
  /// The batch's number within its epoch (for its GPU).
  std::uint64_t index() const noexcept;
  /// The GPU slot of a pipeline, or the rank of an attached client.
  int gpu() const noexcept;
  std::size_t size() const noexcept;
  /// When the batch was ready for the trainer, in CLOCK_MONOTONIC nanoseconds (one clock for
  /// every process of the machine): handed over by the feeder, or published by the node. Now
  /// minus it is how long the batch waited for the trainer, hand-over included.
  std::uint64_t ready_ns() const noexcept;
  /// This is the last batch of its epoch for its GPU (it may be empty: then it only marks the
  /// end).
  bool last_in_epoch() const noexcept;
  /// Gives the buffer back now; the batch is empty afterwards. Idempotent: a second call, or a
  /// call after the pipeline or the client is gone, does nothing. A device batch:
  /// release_after(nullptr).
  void release() noexcept;
  /// Gives the buffer back once the work queued on `stream` so far has completed (the feeder's
  /// GPU waits for it; the call does not block). `stream` may be of any device (a peer GPU
  /// reading the batch); null is the legacy default stream of the calling thread's current
  /// device. A node client's batch (host memory that a trainer may copy to its GPU
  /// asynchronously) goes back to the node once that work has completed, when a stream is
  /// named (cudaStreamLegacy for the legacy default stream); its release() gives it back at
  /// once. As release() otherwise; a stream CUDA refuses fails the pipeline, and that memory is
  /// never reused.
  void release_after(cuda_stream_t stream) noexcept;

 private:
  friend struct batch_access;
  batch(std::shared_ptr<const host_batch> data, std::shared_ptr<batch_home> home);

  std::shared_ptr<const host_batch> data_;
  std::shared_ptr<batch_home> home_;
};

/// The batches of one epoch of one GPU (or rank) as a range. Nothing is ever dropped: leaving
/// the loop early (break) leaves the rest of the epoch for the next epoch() or next() call.
/// The epoch must be the one the GPU is in; otherwise the range is empty and its error() says
/// which epoch that is (nothing is consumed). The range holds the batch it is at until it
/// moves on or is destroyed: after a break, let a named range go before the next call (it
/// would hold one buffer). The range and its iterators stay valid when their pipeline or
/// client is moved; once it is shut down or destroyed they end with an error.
class epoch_range {
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
  /// source stopped or failed); empty while it runs, after a complete epoch, and after a
  /// break.
  std::optional<conveyor::error> error() const;
  /// The epoch's last batch was reached.
  bool complete() const noexcept;

 private:
  friend struct batch_access;
  explicit epoch_range(std::shared_ptr<cursor> at) : at_(std::move(at)) {}
  std::shared_ptr<cursor> at_;
};

/// What the loader's own ledger says so far (the pipeline's, or the node's for a client).
/// Live: it counts every batch handed to a trainer by the time the trainer holds it.
struct pipeline_report {
  std::uint64_t delivered = 0;    ///< sample deliveries over all epochs (and GPUs)
  std::uint64_t quarantined = 0;  ///< samples set aside
  /// Samples the recipe's filter left out (an utterance over max_duration), over all epochs:
  /// neither delivered nor quarantined, not an error.
  std::uint64_t filtered = 0;
  std::uint64_t duplicates = 0;  ///< must be 0
  std::uint64_t lost = 0;        ///< samples of begun epochs not yet accounted for
  std::uint64_t peak_in_flight = 0;
  std::uint64_t handoffs = 0;        ///< samples finished by straggler actors
  std::uint64_t early_handoffs = 0;  ///< of those, handed off from the header, before decode
  std::uint64_t steps_executed = 0;  ///< transform steps run: samples x steps when none is redone
  std::uint64_t retries = 0;         ///< samples issued again: after a failure or a worker's death
  std::uint64_t restarts = 0;        ///< workers restarted by their supervisors
  std::uint64_t hangs = 0;           ///< workers declared hung (supervision.hang_timeout_ms)
  /// Where a sample's time goes, in mean milliseconds per sample: "read", each transform step
  /// by its op name, and "collate" (the write into the batch). A final normalize on the CPU
  /// runs in collate, from the uint8 samples straight into the batch: the steps then end with
  /// "to_uint8". Wall time of the work itself; the rest of a sample's latency is queueing and
  /// messaging. (Empty for a client.)
  std::vector<std::pair<std::string, double>> time_per_sample_ms;
  /// The work of one sample (its steps, wherever they ran, without queueing), in ms, over the
  /// last 8192 prepared: "samples" (how many of them), "mean", "p50", "p90", "p99", "max".
  /// (Empty for a client.)
  std::vector<std::pair<std::string, double>> sample_ms;
  bool finished = false;                         ///< every epoch handed to the GPUs
  std::vector<std::string> quarantined_samples;  ///< "epoch <e> <key>: <reason>" (pipeline)
  /// Per epoch (from 0): samples served by the cache ([cache]; of those, by its disk tier),
  /// and samples and bytes read from storage (for this node, and for its peers). (Empty for a
  /// client.)
  std::vector<std::uint64_t> epoch_cache_hits;
  std::vector<std::uint64_t> epoch_disk_hits;
  std::vector<std::uint64_t> epoch_storage_reads;
  std::vector<std::uint64_t> epoch_storage_bytes;
  /// Per epoch, with [cluster] peers: samples (and bytes) fetched from a peer's cache, samples
  /// a peer holds that were read from storage instead (the peer down, slow or refused), and
  /// samples this node's cache gave its peers.
  std::vector<std::uint64_t> epoch_peer_fetches;
  std::vector<std::uint64_t> epoch_peer_bytes;
  std::vector<std::uint64_t> epoch_peer_fallbacks;
  std::vector<std::uint64_t> epoch_peer_served;
  std::uint64_t cached_samples = 0;     ///< samples the cache holds now
  std::uint64_t cached_bytes = 0;       ///< their encoded bytes
  std::uint64_t cached_disk_bytes = 0;  ///< of those, on the disk tier
  /// With a dataset in an object store (dataset.path = "s3://..."): per epoch, the requests
  /// that fetched its samples, their bytes, and their span in seconds (the first request's
  /// start to the last one's end: the epoch's fetch time); over the run, the attempts (retries
  /// included), the retries, the failed attempts by reason ("throttled", "server_error",
  /// "reset", "timeout", "refused", ...) and the requests that opened the dataset. (Empty and 0
  /// for local files, and for a client.)
  std::vector<std::uint64_t> epoch_s3_requests;
  std::vector<std::uint64_t> epoch_s3_bytes;
  std::vector<double> epoch_s3_fetch_s;
  std::uint64_t s3_attempts = 0;
  std::uint64_t s3_retries = 0;
  std::uint64_t s3_open_requests = 0;
  std::vector<std::pair<std::string, double>> s3_failures;
  /// Each peer that failed during the run: "host:port (rank r): what happened".
  std::vector<std::string> failed_peers;
  /// The live diagnosis (with a monitor interval): what held the node back for most of the
  /// time so far, "trainer", "prep", "fetch" or "window" ("" before the first interval), and
  /// each class's share of the time. (Empty for a client.)
  std::string bottleneck;
  std::vector<std::pair<std::string, double>> bottleneck_shares;
  /// Samples per second the trainers took while the node was trainer-bound (batches ready
  /// whenever asked): their own rate, measured (conveyor-analyze --ingestion takes it); 0 when
  /// the node never was.
  double trainer_samples_per_s = 0;
  /// With pipeline.autotune: the changes of counts the autotuner made (a trial taken back is
  /// two), and its counts at the end: "preprocessors", "stragglers", "readers", "window", and
  /// the window's bound, "window_bound" (pipeline.max_window_samples).
  /// (0 and empty without it, and for a client.)
  std::uint64_t autotune_changes = 0;
  std::vector<std::pair<std::string, double>> autotune_counts;
};

}  // namespace conveyor
