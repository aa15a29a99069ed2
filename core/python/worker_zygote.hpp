#pragma once
/// The process every Python worker of one pool is forked from: python/conveyor_worker.py,
/// spawned (child_process.hpp: never a fork of this process, whose other threads may hold
/// locks). It prepares the trainer's main module as multiprocessing's spawn does, unpickles
/// the dataset once (importing its modules: numpy, torch, the user's) and then, single-threaded,
/// forks a worker on request. A worker so starts in milliseconds, and shares the zygote's
/// imported modules and dataset copy-on-write (the zygote freezes them out of the garbage
/// collector's reach first), where a spawned worker would import and unpickle everything
/// again in memory of its own.
///
/// A worker is the zygote's child, not this process's: the zygote reaps it and writes its wait
/// status to a pipe whose read end the worker_process holds, with a pidfd of it (protocol:
/// worker_protocol.hpp). A worker outlives a zygote that dies (its status is then unknown);
/// the zygote exits when this process is gone (its socket closes).
///
/// Thread-safe: forks are made one at a time. Every wait is bounded. Destroying it stops the
/// zygote (a stop message, at most launch.stop_grace, then SIGKILL) and reaps it; the workers
/// it forked live on until their owners end them.

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"
#include "core/python/worker_process.hpp"

namespace conveyor {

class worker_zygote {
 public:
  /// Spawns the zygote and waits (at most launch.start_timeout) until it has unpickled the
  /// dataset. Errors: errc::worker_failed naming why it did not start (the exception its
  /// start raised: an import or unpickling error; the exit code or signal it died of; no
  /// answer in time, after which it is killed); errc::io_error naming the call that failed;
  /// errc::invalid_argument for a launch without its setup.
  static expected<std::shared_ptr<worker_zygote>> start(const worker_launch& launch);

  /// Takes over a zygote another process forked (conveyor.DataLoader forks it from the
  /// trainer: python/conveyor_worker.py's fork_zygote): `socket`, its owner's end of its
  /// socket, and `process`, a pidfd of it, both checked (a SOCK_SEQPACKET Unix socket; a
  /// pidfd) and then owned; waits (at most launch.start_timeout) for its ready. It is not this
  /// process's child: when it ends its parent reaps it, and its exit status is not known here.
  /// Errors: errc::invalid_config naming the descriptor that is not what it must be;
  /// errc::worker_failed as start's.
  static expected<std::shared_ptr<worker_zygote>> adopt(const worker_launch& launch,
                                                        unique_fd socket, unique_fd process);

  worker_zygote(const worker_zygote&) = delete;
  worker_zygote& operator=(const worker_zygote&) = delete;
  ~worker_zygote();

  /// Forks worker `worker_id` and waits (at most launch.start_timeout) until it is ready
  /// (worker_init_fn(worker_id) has run). Errors: errc::worker_failed naming the worker and
  /// why it did not start (worker_init_fn's exception, how it ended, no answer in time), or
  /// naming the zygote when it could not fork (it is gone, or its reply was not one: it is
  /// then killed).
  expected<worker_process> fork_worker(std::uint32_t worker_id);

  /// Whether the zygote still runs.
  bool alive() const noexcept;
  pid_t pid() const noexcept { return pid_; }

 private:
  worker_zygote(const worker_launch& launch, pid_t pid, unique_fd process, unique_fd socket,
                bool child);
  /// Sends a spawned zygote its start message (the setup in a sealed memfd).
  expected<void> send_setup();
  expected<void> await_ready();
  /// Ends the zygote (given `grace` to end by itself, then killed); how it ended.
  std::string end(std::chrono::milliseconds grace) noexcept;
  expected<forked_process> fork_process(std::uint32_t worker_id, int worker_socket);
  error failed(const std::string& why);

  const worker_launch launch_;
  std::mutex mutex_;  ///< one fork at a time
  pid_t pid_ = -1;
  unique_fd process_;  ///< a pidfd
  unique_fd socket_;
  const bool child_;  ///< spawned by this process (reaped here), else adopted
  std::atomic<bool> reaped_{false};
};

}  // namespace conveyor
