#pragma once
/// One Python worker process (python/conveyor_worker.py), as the actor that owns it sees it:
/// started with posix_spawn (never a fork of this process, whose other threads may hold locks),
/// in a process group of its own (a terminal's Ctrl-C reaches the trainer, which stops its
/// workers), with its end of a SOCK_SEQPACKET socket as descriptor 3 and nothing else of
/// this process's (every other descriptor is close-on-exec). It runs dataset[index] for one
/// sample at a time and answers through worker_protocol.hpp's messages.
///
/// Owned by one actor at a time (moved with a sample it is working on); not thread-safe.
/// Every wait is bounded. Destroying it stops the worker: a stop message, at most
/// `stop_grace` for it to exit, then SIGKILL; the process is always reaped.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"
#include "core/python/worker_protocol.hpp"

namespace conveyor {

/// What every worker of one loader starts from.
struct worker_launch {
  std::string python = "/usr/bin/python3";  ///< the interpreter (the trainer's sys.executable)
  std::string script;                       ///< the path of conveyor_worker.py
  /// pickle.dumps((preparation, pickle.dumps({"dataset": ..., "worker_init_fn": ...}))), as
  /// python/conveyor_worker.py reads it; made once by the loader, shared by its workers.
  std::shared_ptr<const std::vector<std::uint8_t>> setup;
  /// How long a worker may take to import, unpickle the dataset and run worker_init_fn.
  std::chrono::milliseconds start_timeout{std::chrono::seconds(120)};
  /// How long a stopped worker may take to exit before it is killed.
  std::chrono::milliseconds stop_grace{std::chrono::seconds(2)};
};

class worker_process {
 public:
  /// Starts worker `worker_id` and waits until it is ready. Errors: errc::worker_failed naming
  /// the worker and why it did not start (the exception its start raised: an import or
  /// unpickling error, worker_init_fn's; the exit code or signal it died of; no answer within
  /// start_timeout, after which it is killed); errc::io_error naming the call that failed.
  static expected<worker_process> start(const worker_launch& launch, std::uint32_t worker_id);

  worker_process(worker_process&& o) noexcept;
  worker_process& operator=(worker_process&& o) noexcept;
  worker_process(const worker_process&) = delete;
  worker_process& operator=(const worker_process&) = delete;
  ~worker_process();

  /// Asks the worker for dataset[index] of `epoch`, its draws seeded by `seed`. One sample at a
  /// time: precondition: no ask is unanswered. errc::worker_failed when the worker is gone.
  expected<void> ask(std::uint64_t epoch, std::uint64_t index, std::uint64_t seed);

  /// Waits at most `timeout` for the answer to the last ask. Errors: errc::timed_out (the
  /// worker is still at it: wait again, or kill it); errc::transform_error naming the index and
  /// the exception the user's code raised (the worker lives on); errc::worker_failed naming
  /// the worker and the signal or exit code it died of, or the reply it sent that did not
  /// decode (it is killed: a worker that breaks the protocol is not trusted again). After
  /// worker_failed the worker is gone (alive() is false).
  expected<worker_sample> await(std::chrono::milliseconds timeout);

  /// Asks the worker to exit after its current sample (without waiting): destroying it then
  /// takes only as long as the worker needs to exit.
  void request_stop() noexcept;

  /// Kills the worker now (SIGKILL) and reaps it; a sample it was working on is lost to it.
  void kill() noexcept;

  bool alive() const noexcept { return pid_ > 0; }
  pid_t pid() const noexcept { return pid_; }
  std::uint32_t id() const noexcept { return id_; }
  /// The socket its answers arrive on (readable when one has), for an owner that polls.
  int socket() const noexcept { return socket_.get(); }

 private:
  worker_process(pid_t pid, unique_fd process, unique_fd socket, std::uint32_t id,
                 std::chrono::milliseconds stop_grace) noexcept;
  /// Why the worker ended ("exited with code 3", "was killed by signal 9 (Killed)"), after it
  /// was given `grace` to end by itself and killed past it; reaps it.
  std::string reap(std::chrono::milliseconds grace) noexcept;
  /// errc::worker_failed naming the worker, `why` and how it ended (given `grace` to end by
  /// itself, then killed).
  error failed(const std::string& why, std::chrono::milliseconds grace);
  std::string named() const;
  void stop() noexcept;

  pid_t pid_ = -1;
  unique_fd process_;  ///< a pidfd: readable once the process has ended
  unique_fd socket_;
  std::uint32_t id_ = 0;
  std::chrono::milliseconds stop_grace_{};
};

}  // namespace conveyor
