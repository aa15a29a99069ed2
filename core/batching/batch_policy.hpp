#pragma once
/// A batching policy decides which prepared samples form the next batch of each GPU. It is a
/// small plain class (no actors); the batcher feeds it and asks it for batches.

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "core/batching/bucketing.hpp"
#include "core/batching/prepared_sample.hpp"

namespace conveyor {

struct batch_shape {
  std::uint64_t batch_size = 0;
  int gpus = 1;
  /// latency_aware: every GPU gets the same number of batches per epoch (the first
  /// batches % gpus one more), whichever asks first. Data-parallel ranks step together: a rank
  /// left with fewer batches would wait for the others' gradients forever. The pipeline sets
  /// it; off, whichever GPU asks gets the next batch.
  bool balanced = false;
  /// The first epoch (a resumed run begins later than 0): every GPU starts in it.
  std::uint64_t first_epoch = 0;
  /// latency_aware: batches are formed of samples of one length bucket (bucketing.hpp).
  bucketing buckets{};
};

/// Single-threaded (owned by the batcher).
class batch_policy {
 public:
  virtual ~batch_policy() = default;
  virtual std::string_view name() const noexcept = 0;

  /// Epoch `epoch` of `samples` samples starts; epochs begin in increasing order.
  virtual void begin_epoch(std::uint64_t epoch, std::uint64_t samples) = 0;
  /// A sample of a begun epoch is ready.
  virtual void add(prepared_ptr sample) = 0;
  /// The sample at `seq` of `epoch` will never come (it was quarantined).
  virtual void drop(std::uint64_t epoch, std::uint64_t seq) = 0;
  /// The next batch for `gpu` if one can be formed now. Every sample of an epoch ends up in
  /// exactly one batch; each GPU then gets one plan flagged last_in_epoch.
  virtual std::optional<batch_plan> take(int gpu) = 0;
  /// Whether the credit window is full: no further sample can be dispatched until a batch is
  /// released, so the samples waiting now are all a batch can be made of. The batcher says so
  /// before it asks for batches.
  virtual void set_window_full(bool full) { (void)full; }
};

/// The batching policies a topology can name (`batching.policy`).
enum class batching_policy : std::uint8_t { in_order, latency_aware };

/// "in_order" or "latency_aware", as the topology names them.
std::string_view to_string(batching_policy kind) noexcept;

/// The policy of that kind.
std::unique_ptr<batch_policy> make_batch_policy(batching_policy kind, batch_shape shape);

/// The baseline (PyTorch DataLoader's behaviour): batch b of an epoch holds the samples at
/// positions [b * batch_size, (b + 1) * batch_size) of the sampler's order, goes to GPU
/// b mod gpus, and each GPU gets its batches in order: a batch waits for its slowest sample.
std::unique_ptr<batch_policy> make_in_order_policy(batch_shape shape);

/// No batch waits for a slow sample (MinatoLoader's idea, with exactly-once per epoch).
/// Batches are filled from the completed samples of the earliest unfinished epoch, in
/// completion order: whichever GPU asks gets the next batch_size ready samples. A sample that
/// finishes late (a straggler) joins a later batch of its own epoch, never one of another.
/// Once every sample of the epoch not yet taken is ready (the others were dropped), the
/// remainder goes out as a partial last batch, flagged last_in_epoch for the GPU that takes
/// it; every other GPU gets an empty flagged plan on its next take. batch_plan::index numbers
/// the epoch's batches in the order they were formed (an empty end marker takes no number).
///
/// A GPU cannot start epoch e + 1 before epoch e is fully taken: take() answers nullopt until
/// then. A GPU that moved on early would leave e's stragglers to GPUs still in e or let them
/// slip into e + 1, which breaks the exactly-once promise and the meaning of last_in_epoch
/// (after it, the GPU sees nothing more of that epoch). So the tail of an epoch waits, but only
/// for that epoch's own stragglers, while the batcher keeps preparing e + 1 within its window.
/// With shape.balanced, a GPU takes at most its share of the epoch's batches; the batch that
/// completes its share is flagged last_in_epoch for it. batch_size 0 reads as 1.
///
/// With shape.buckets, a batch is batch_size ready samples of one length bucket (the bucket
/// whose oldest ready sample waited longest). Samples of different buckets share a batch only
/// where waiting could stall: when the window is full (set_window_full; then the bucket with
/// the oldest sample is filled from its nearest buckets) and at the epoch's end, once every
/// sample still to come is ready (a sample of a rare bucket never waits past it). Every batch
/// but the epoch's last is full either way, so an epoch has as many batches as without buckets
/// and the GPUs' shares stay equal.
std::unique_ptr<batch_policy> make_latency_aware_policy(batch_shape shape);

}  // namespace conveyor
