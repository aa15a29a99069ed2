#pragma once
/// A batching policy decides which prepared samples form the next batch of each GPU. It is a
/// small plain class (no actors); the batcher feeds it and asks it for batches.

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "core/prepared_sample.hpp"

namespace conveyor {

struct batch_shape {
  std::uint64_t batch_size = 0;
  int gpus = 1;
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
};

/// The batching policies a topology can name (`batching.policy`).
enum class batching_policy : std::uint8_t { in_order, latency_aware };

/// "in_order" or "latency_aware", as the topology names them.
std::string_view to_string(batching_policy kind) noexcept;

/// The policy of that kind. latency_aware falls back to in_order until it exists.
std::unique_ptr<batch_policy> make_batch_policy(batching_policy kind, batch_shape shape);

/// The baseline (PyTorch DataLoader's behaviour): batch b of an epoch holds the samples at
/// positions [b * batch_size, (b + 1) * batch_size) of the sampler's order, goes to GPU
/// b mod gpus, and each GPU gets its batches in order: a batch waits for its slowest sample.
std::unique_ptr<batch_policy> make_in_order_policy(batch_shape shape);

}  // namespace conveyor
