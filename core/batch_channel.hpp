#pragma once
/// The hand-over from a feeder (an actor) to a trainer (a plain thread): a queue that the
/// feeder pushes to and the trainer blocks on. Credits bound its length, so push never
/// blocks.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

#include "core/host_batch.hpp"

namespace conveyor {

/// Thread-safe: one or more producers, one or more consumers.
class batch_channel {
 public:
  using item = std::shared_ptr<const host_batch>;

  void push(item batch);
  /// Blocks until a batch is there (returns it) or the channel is closed and drained
  /// (returns nullptr).
  item pop();
  /// Wakes every waiter; pushes after close are dropped.
  void close();
  bool closed() const;
  std::size_t size() const;

 private:
  item take_front();

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<item> queue_;
  bool closed_ = false;
};

}  // namespace conveyor
