#pragma once
/// One Python worker process (python/conveyor_worker.py), as the actor that owns it sees it:
/// forked by its pool's zygote (worker_zygote.hpp: never a fork of this process, whose other
/// threads may hold locks), in the zygote's process group (a terminal's Ctrl-C reaches the
/// trainer, which stops its workers), with its end of a SOCK_SEQPACKET socket as descriptor 3.
/// It runs dataset[index] for one sample at a time and answers through worker_protocol.hpp's
/// messages. It ends by itself when this process is gone (its socket closes).
///
/// Owned by one actor at a time (moved with a sample it is working on); not thread-safe.
/// Every wait is bounded. Destroying it stops the worker: a stop message, at most
/// `stop_grace` for it to exit, then SIGKILL (through its pidfd: never another process that
/// took its pid); the zygote reaps it and its wait status names how it ended.

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
  /// The path of conveyor_worker.py; "": the installed package's (python_worker_command,
  /// child_process.hpp: the interpreter must import conveyor).
  std::string script;
  /// What a spawned zygote starts from, as python/conveyor_worker.py's start reads it (the
  /// loader's write_setup: spawn's preparation, then {"dataset": ..., "worker_init_fn": ...}
  /// pickled; or a topology's Python steps as JSON).
  std::shared_ptr<const std::vector<std::uint8_t>> setup;
  /// Where the setup is when `setup` is empty: the regular file read (at most the machine's
  /// memory) each time a zygote is spawned, so that a node whose zygote the trainer forked,
  /// which spawns one only if that dies, keeps no copy of a large pickled dataset meanwhile.
  std::string setup_file;
  /// How long the zygote may take to import and unpickle the dataset, and a worker to fork and
  /// run worker_init_fn.
  std::chrono::milliseconds start_timeout{std::chrono::seconds(120)};
  /// How long a stopped worker or zygote may take to exit before it is killed.
  std::chrono::milliseconds stop_grace{std::chrono::seconds(2)};
};

class worker_zygote;

class worker_process {
 public:
  worker_process(worker_process&& o) noexcept;
  worker_process& operator=(worker_process&& o) noexcept;
  worker_process(const worker_process&) = delete;
  worker_process& operator=(const worker_process&) = delete;
  ~worker_process();

  /// Asks the worker for dataset[index] of `epoch`, its draws seeded by `seed`. One sample at a
  /// time: precondition: no ask is unanswered. errc::worker_failed when the worker is gone.
  expected<void> ask(std::uint64_t epoch, std::uint64_t index, std::uint64_t seed);

  /// Asks the worker to run a topology's Python step: `message` an apply_message, `fields` the
  /// memfd of its fields' bytes (-1 for none). Otherwise as ask().
  expected<void> ask_step(const std::vector<std::uint8_t>& message, int fields);

  /// Waits at most `timeout` for the answer to the last ask. Errors: errc::timed_out (the
  /// worker is still at it: wait again, or kill it); errc::transform_error naming the index and
  /// the exception the user's code raised (the worker lives on); errc::worker_failed naming
  /// the worker and the signal or exit code it died of, or the reply it sent that did not
  /// decode (it is killed: a worker that breaks the protocol is not trusted again). After
  /// worker_failed the worker is gone (alive() is false). The answer's bytes lie in the
  /// worker's own memfd (worker_sample): copy them out before the next ask.
  expected<worker_sample> await(std::chrono::milliseconds timeout);

  /// The worker's inbox, a memfd of at least `bytes` made once and grown as needed (never
  /// shrunk: a worker keeps its mapping while the size holds), which the owner writes the fields
  /// of a step into before ask_step(): its descriptor (owned here), or errc::io_error.
  expected<int> inbox(std::uint64_t bytes);

  /// Asks the worker to exit after its current sample (without waiting): destroying it then
  /// takes only as long as the worker needs to exit.
  void request_stop() noexcept;

  /// Kills the worker now (SIGKILL) and waits for its status; a sample it was working on is
  /// lost to it.
  void kill() noexcept;

  bool alive() const noexcept { return pid_ > 0; }
  pid_t pid() const noexcept { return pid_; }
  std::uint32_t id() const noexcept { return id_; }
  /// The socket its answers arrive on (readable when one has), for an owner that polls.
  int socket() const noexcept { return socket_.get(); }

 private:
  friend class worker_zygote;
  worker_process(forked_process forked, unique_fd socket, std::uint32_t id,
                 std::chrono::milliseconds stop_grace) noexcept;
  /// Waits at most `timeout` for the worker's ready (worker_init_fn has run); errc::
  /// worker_failed naming why not (it is then ended).
  expected<void> await_ready(std::chrono::milliseconds timeout);
  /// Why the worker ended ("exited with code 3", "was killed by signal 9 (Killed)"), after it
  /// was given `grace` to end by itself and killed past it; its status as the zygote wrote it.
  std::string reap(std::chrono::milliseconds grace) noexcept;
  /// errc::worker_failed naming the worker, `why` and how it ended (given `grace` to end by
  /// itself, then killed).
  error failed(const std::string& why, std::chrono::milliseconds grace);
  std::string named() const;
  void stop() noexcept;
  expected<void> send(const std::vector<std::uint8_t>& message, int fd);

  pid_t pid_ = -1;
  unique_fd process_;  ///< a pidfd: readable once the process has ended
  unique_fd status_;   ///< where the zygote writes its wait status
  unique_fd socket_;
  unique_fd inbox_;
  std::uint64_t inbox_bytes_ = 0;
  std::uint32_t id_ = 0;
  std::chrono::milliseconds stop_grace_{};
};

}  // namespace conveyor
