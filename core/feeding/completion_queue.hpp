#pragma once
/// Hands a ring's batches over as their device work completes, in submission order, and turns
/// a fault or a stall of that work into a failure within a deadline. A batch that is complete
/// when it is pushed behind nothing is handed over at once, on the pushing thread; the others
/// by the queue's own thread (started on first need), which polls the engine and never waits
/// past an entry's deadline.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/feeding/copy_engine.hpp"

namespace conveyor {

class completion_queue {
 public:
  struct entry {
    const engine_event* done = nullptr;       ///< completes with the batch's device work
    std::chrono::milliseconds timeout{0};     ///< from push() until the work must be complete
    copy_engine::clock::time_point deadline;  ///< set by push()
    std::string what;  ///< "batch 3 of epoch 1 (slot 2)": for the failure's message
    std::function<void()> on_ready;
  };
  /// Called once, on the thread that found it, with the entry and the engine's error
  /// (errc::timed_out for a deadline); nothing is delivered afterwards.
  using failure_handler = std::function<void(const entry&, const error&)>;

  /// `engine` must outlive the queue.
  completion_queue(copy_engine& engine, failure_handler on_failure);
  ~completion_queue();
  completion_queue(const completion_queue&) = delete;
  completion_queue& operator=(const completion_queue&) = delete;

  /// One producer thread. The entry's event must stay alive until it is delivered or stop()
  /// returns.
  void push(entry e);
  /// Stops the thread (within a polling interval) and drops what was not delivered, with the
  /// handlers it holds. Idempotent.
  void stop();
  /// Entries pushed and not yet delivered.
  std::size_t pending() const;

 private:
  void loop();
  void fail(const entry& e, const error& why);
  /// Waits for the front entry for at most one polling interval; true when it is settled
  /// (delivered or failed).
  bool settle_front(const entry& e);

  copy_engine& engine_;
  failure_handler on_failure_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<entry> queue_;  ///< the front stays while it is being delivered
  bool stopping_ = false;
  bool failed_ = false;
  std::thread thread_;
};

}  // namespace conveyor
