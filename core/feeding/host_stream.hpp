#pragma once
/// Host streams and their events, as CUDA's streams and events behave: a stream runs the work
/// queued on it in order, on its own thread, asynchronously to the caller; an event recorded
/// on a stream completes when the work queued before the record has run, and a stream can
/// wait for an event recorded on another. The host copy engine's queue is one; a test's
/// simulated trainer (kernels that read a batch later) is another.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "conveyor/error.hpp"

namespace conveyor {

/// What an event records: numbered records, the number of the latest one that completed, and
/// the error of a stream that failed before completing one. Thread-safe; shared by the event
/// and the stream work that completes it.
class host_event_state {
 public:
  using clock = std::chrono::steady_clock;
  /// A new record; returns its number (the one that complete() and wait_until() take).
  std::uint64_t arm();
  /// The number of the latest record (0: never recorded).
  std::uint64_t latest() const;
  void complete(std::uint64_t record);
  /// Record `record` will never complete: the stream that was to complete it failed.
  void fail(std::uint64_t record, const error& why);
  /// True when `record` has completed; the stream's error when it failed.
  expected<bool> done(std::uint64_t record) const;
  /// Waits until `record` completes (true), fails (its error) or `deadline` passes (false).
  expected<bool> wait_until(std::uint64_t record, clock::time_point deadline) const;

 private:
  expected<bool> done_locked(std::uint64_t record) const;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::uint64_t armed_ = 0;
  std::uint64_t completed_ = 0;
  std::uint64_t failed_from_ = 0;  ///< records from this one on failed (0: none)
  std::optional<error> failure_;
};

/// Work on a stream: its error puts the stream in a sticky error state.
using stream_work = std::function<expected<void>()>;

/// A stream: threaded (work runs on its own thread, in order) or inline (work runs at once, on
/// the caller's thread: host memory needs no queue). Thread-safe. After a failure no more work
/// runs, and records fail their events with the failure. The destructor aborts work that is
/// pausing (pause() returns false), drops what is queued, and joins the thread.
class host_stream {
 public:
  enum class mode : bool { threaded, run_inline };

  host_stream(std::string name, mode m);
  ~host_stream();
  host_stream(const host_stream&) = delete;
  host_stream& operator=(const host_stream&) = delete;

  const std::string& name() const noexcept { return name_; }
  void enqueue(stream_work work);
  /// Queues the completion of record `record` of `event`.
  void enqueue_record(std::shared_ptr<host_event_state> event, std::uint64_t record);
  /// Later work waits until record `record` of `event` completes; its failure fails this
  /// stream.
  void enqueue_wait(std::shared_ptr<host_event_state> event, std::uint64_t record);
  /// The sticky error, if the stream failed.
  std::optional<error> failure() const;
  /// For work: waits `duration` (or for ever with nullopt) unless the stream is destroyed
  /// first; false when it was.
  bool pause(std::optional<std::chrono::nanoseconds> duration) const;

 private:
  struct item {
    stream_work work;
    std::shared_ptr<host_event_state> event;  ///< set: complete (or fail) this record
    std::uint64_t record = 0;
  };
  void push(item it);
  void run(item& it);
  void loop();

  const std::string name_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::deque<item> queue_;
  std::optional<error> failure_;
  bool aborting_ = false;
  std::thread thread_;  ///< none when inline
};

}  // namespace conveyor
