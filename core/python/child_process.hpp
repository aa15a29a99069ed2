#pragma once
/// Starting and ending the processes of core/python: how a Python process is spawned (never a
/// fork of the calling process, whose other threads may hold locks), and how an ended one is
/// named. Pure helpers over the kernel's calls; thread-safe.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {

/// The descriptor a spawned Python process finds its socket on (python/conveyor_worker.py's
/// SOCKET_FD).
inline constexpr int python_socket_fd = 3;

/// The worker script as the installed package's module, for a `script` of "" (-c, not -m: the
/// package imports the module before -m would run it, and runpy warns of that).
inline constexpr std::string_view python_worker_command =
    "from conveyor import conveyor_worker; conveyor_worker.main()";

/// Spawns `python script` (`python -c python_worker_command` for a script of "": the working
/// directory then comes first on its sys.path) (posix_spawn) in a process group of its own (a
/// terminal's Ctrl-C reaches only the caller, which stops its processes), with no blocked signals,
/// the signals a caller may catch or ignore back to their defaults, `socket` as descriptor
/// python_socket_fd and no other descriptor of the caller's (every other one is close-on-exec). Its
/// pid, or errc::io_error naming the call that failed.
expected<pid_t> spawn_python(const std::string& python, const std::string& script, int socket);

/// A pidfd of `pid` (readable once it has ended), or errc::io_error.
expected<unique_fd> open_pidfd(pid_t pid);

/// The pid a pidfd refers to (its /proc/self/fdinfo's "Pid:" line), or -1 when `fd` is no
/// pidfd or its process has ended and been reaped.
pid_t pid_of_pidfd(int fd);

/// Whether `fd` became readable within `timeout` (false on a poll error).
bool readable_within(int fd, std::chrono::milliseconds timeout) noexcept;

/// How a process with wait status `status` ended: "exited with code 3", "was killed by signal
/// 9 (Killed)".
std::string ending_of(int status);

/// Ends the process of pidfd `process` (any process: a child of another, or of none): it is
/// given `grace` to end by itself, then killed (SIGKILL through the pidfd, never another that
/// took its pid); returns once it has ended, or at most 10 s after the kill. Not reaped: its
/// parent reaps it. Whether it ended.
bool end_by_pidfd(int process, std::chrono::milliseconds grace) noexcept;

/// A descriptor number given in `config` (e.g. "python.zygote_socket") checked and taken: it
/// must be open, and becomes close-on-exec (no process this one spawns inherits it).
/// errc::invalid_config naming the key otherwise.
expected<unique_fd> adopt_descriptor(int fd, const std::string& key);

/// Waits at most `timeout` for the ready message of a process just started on `socket` (a
/// zygote, a worker: worker_protocol.hpp). "" once it is ready, else why not ("not ready
/// within N ms", "it did not start", "its start raised <exception>", or the reply refused).
std::string not_ready(int socket, std::chrono::milliseconds timeout);

/// Ends the direct child `pid` (pidfd `process`): it is given `grace` to end by itself, then
/// killed (SIGKILL); it is reaped either way. How it ended (ending_of), or why that is unknown.
std::string reap_child(pid_t pid, int process, std::chrono::milliseconds grace) noexcept;

}  // namespace conveyor
