#include "core/python/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/python/worker_protocol.hpp"

extern char** environ;

namespace conveyor {

namespace {

error io_failure(const std::string& call, int err) {
  return error{errc::io_error, "starting a Python process: " + call + ": " + std::strerror(err)};
}

struct spawn_attributes {
  posix_spawnattr_t attr{};
  spawn_attributes() {
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int s : {SIGTERM, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2}) {
      sigaddset(&defaults, s);
    }
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  }
  ~spawn_attributes() { posix_spawnattr_destroy(&attr); }
  spawn_attributes(const spawn_attributes&) = delete;
  spawn_attributes& operator=(const spawn_attributes&) = delete;
};

// /proc/self/fdinfo/<fd>'s first 4 KiB ("" when it cannot be read).
std::string read_fdinfo(int fd) {
  unique_fd info(::open(("/proc/self/fdinfo/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC));
  std::string text(4096, '\0');
  ssize_t n = -1;
  if (info) {
    do {
      n = ::read(info.get(), text.data(), text.size());
    } while (n < 0 && errno == EINTR);
  }
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return text;
}

}  // namespace

pid_t pid_of_pidfd(int fd) {
  const auto info = read_fdinfo(fd);
  const auto at = info.find("\nPid:\t");
  if (at == std::string::npos) {
    return -1;
  }
  return static_cast<pid_t>(std::strtol(info.c_str() + at + 6, nullptr, 10));
}

expected<pid_t> spawn_python(const std::string& python, const std::string& script, int socket) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 onto itself clears close-on-exec too (glibc >= 2.29).
  posix_spawn_file_actions_adddup2(&actions, socket, python_socket_fd);
  spawn_attributes attributes;
  std::vector<std::string> args = {python, script};
  if (script.empty()) {
    args = {python, "-c", std::string(python_worker_command)};
  }
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc =
      posix_spawn(&pid, python.c_str(), &actions, &attributes.attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return io_failure("posix_spawn " + python, rc);
  }
  return pid;
}

expected<unique_fd> open_pidfd(pid_t pid) {
  unique_fd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!fd) {
    return io_failure("pidfd_open", errno);
  }
  return fd;
}

bool readable_within(int fd, std::chrono::milliseconds timeout) noexcept {
  pollfd p{fd, POLLIN, 0};
  int rc = 0;
  do {
    rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  return rc > 0;
}

std::string ending_of(int status) {
  if (WIFEXITED(status)) {
    return "exited with code " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    const int s = WTERMSIG(status);
    return "was killed by signal " + std::to_string(s) + " (" + strsignal(s) + ")";
  }
  return "ended (status " + std::to_string(status) + ")";
}

std::string not_ready(int socket, std::chrono::milliseconds timeout) {
  auto got = receive_message(socket, max_worker_message, timeout);
  if (!got) {
    return got.error().code() == errc::timed_out
               ? "not ready within " + std::to_string(timeout.count()) + " ms"
               : "it did not start";
  }
  auto reply = decode_reply(std::move(*got));
  if (!reply) {
    return reply.error().message();
  }
  if (reply->kind != reply_kind::ready) {
    return "its start raised " + reply->exception.what();
  }
  return {};
}

bool end_by_pidfd(int process, std::chrono::milliseconds grace) noexcept {
  constexpr std::chrono::milliseconds kill_bound(std::chrono::seconds(10));
  if (readable_within(process, grace)) {
    return true;
  }
  ::syscall(SYS_pidfd_send_signal, process, SIGKILL, nullptr, 0);
  return readable_within(process, kill_bound);
}

expected<unique_fd> adopt_descriptor(int fd, const std::string& key) {
  const int flags = fd >= 0 ? ::fcntl(fd, F_GETFD) : -1;
  if (flags < 0 || ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC) != 0) {
    return error{errc::invalid_config,
                 key + ": descriptor " + std::to_string(fd) + " is not open in this process"};
  }
  return unique_fd(fd);
}

std::string reap_child(pid_t pid, int process, std::chrono::milliseconds grace) noexcept {
  if (process < 0 || !readable_within(process, grace)) {
    ::kill(pid, SIGKILL);  // a child not yet reaped: its pid is still its own
  }
  int status = 0;
  pid_t rc = 0;
  do {
    rc = ::waitpid(pid, &status, 0);
  } while (rc < 0 && errno == EINTR);
  return rc < 0 ? "was lost (waitpid: " + std::string(std::strerror(errno)) + ")"
                : ending_of(status);
}

}  // namespace conveyor
