#pragma once
/// What stands behind the public batch API (include/conveyor/batch.hpp), for its two
/// transports: a pipeline in this process and a client of a node. A batch_home takes released
/// batches back; a batch_stream hands out the batches of one GPU (rank) in order, and epoch
/// ranges walk it. Internal to the library.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "conveyor/batch.hpp"
#include "core/delivery/host_batch.hpp"
#include "core/delivery/slot_owner.hpp"

namespace conveyor {

/// Where a batch goes when it is released, once the work queued on `stream` so far has
/// completed (a batch in a ring of slots has told its owner already: the ring orders the reuse
/// on the device; a node's client waits for that work before the node hears of it). give_back
/// may be called from any thread, and after the transport stopped (then it does nothing).
class batch_home {
 public:
  virtual ~batch_home() = default;
  virtual void give_back(const host_batch& b, consumer_stream stream) noexcept = 0;
};

/// The batches of one GPU (or rank), one at a time; used by one thread at a time.
class batch_stream {
 public:
  virtual ~batch_stream() = default;
  /// The next batch, counting the epochs that end (last_in_epoch).
  virtual expected<batch> next() = 0;
  /// Epochs this GPU has finished: the one it is in.
  virtual std::uint64_t epochs_ended() const = 0;
  virtual std::uint64_t epochs() const = 0;
  /// "gpu 1", "rank 1 of job 0": for messages.
  virtual std::string name() const = 0;
};

/// Why epoch `epoch` cannot be walked now by `name`, which has finished `ended` of `epochs`
/// epochs: errc::not_found (no such epoch), errc::invalid_argument (an earlier epoch is not
/// finished, or this one has ended); nullopt when it is the epoch `name` is in. Pure.
std::optional<error> out_of_turn(const std::string& name, std::uint64_t epoch, std::uint64_t ended,
                                 std::uint64_t epochs);

/// The private constructors of batch and epoch_range, for the transports.
struct batch_access {
  static batch make(std::shared_ptr<const host_batch> data, std::shared_ptr<batch_home> home);
  /// The feeder slot `b` lies in (an empty end-of-epoch batch has one too, but no data);
  /// -1 for a batch that holds no slot.
  static std::int64_t slot(const batch& b) noexcept;
  /// The host buffer `b`'s fields lie in (null for none).
  static const std::uint8_t* host_buffer(const batch& b) noexcept;
  /// Where `b`'s fields lie in its buffer (empty for none).
  static std::vector<batch_field> fields(const batch& b);
  /// A range over epoch `epoch` of `stream`; with `failure`, one that ends at once with it.
  static epoch_range range(std::shared_ptr<batch_stream> stream, std::uint64_t epoch,
                           std::optional<error> failure = std::nullopt);
};

}  // namespace conveyor
