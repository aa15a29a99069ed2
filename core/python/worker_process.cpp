#include "core/python/worker_process.hpp"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/serving/shared_region.hpp"

extern char** environ;

namespace conveyor {

namespace {

constexpr int worker_socket_fd = 3;  // python/conveyor_worker.py's SOCKET_FD
// How long a worker that broke off is given to end by itself, so that its own exit code or
// signal is what is reported.
constexpr std::chrono::milliseconds ending_grace(500);

error io_failure(const std::string& call, int err) {
  return error{errc::io_error, "starting a Python worker: " + call + ": " + std::strerror(err)};
}

// The attributes of a worker's spawn: its own process group, no blocked signals, and the
// signals a trainer may catch or ignore back to their defaults.
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

expected<pid_t> spawn_worker(const worker_launch& launch, int child_socket) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 onto itself clears close-on-exec too (glibc >= 2.29).
  posix_spawn_file_actions_adddup2(&actions, child_socket, worker_socket_fd);
  spawn_attributes attributes;
  std::vector<std::string> args = {launch.python, launch.script};
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc =
      posix_spawn(&pid, launch.python.c_str(), &actions, &attributes.attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return io_failure("posix_spawn " + launch.python, rc);
  }
  return pid;
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

// Waits at most `timeout` for `fd` to be readable.
bool readable_within(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  int rc = 0;
  do {
    rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  return rc > 0;
}

}  // namespace

worker_process::worker_process(pid_t pid, unique_fd process, unique_fd socket, std::uint32_t id,
                               std::chrono::milliseconds stop_grace) noexcept
    : pid_(pid),
      process_(std::move(process)),
      socket_(std::move(socket)),
      id_(id),
      stop_grace_(stop_grace) {}

worker_process::worker_process(worker_process&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      process_(std::move(o.process_)),
      socket_(std::move(o.socket_)),
      id_(o.id_),
      stop_grace_(o.stop_grace_) {}

worker_process& worker_process::operator=(worker_process&& o) noexcept {
  if (this != &o) {
    stop();
    pid_ = std::exchange(o.pid_, -1);
    process_ = std::move(o.process_);
    socket_ = std::move(o.socket_);
    id_ = o.id_;
    stop_grace_ = o.stop_grace_;
  }
  return *this;
}

worker_process::~worker_process() {
  stop();
}

expected<worker_process> worker_process::start(const worker_launch& launch,
                                               std::uint32_t worker_id) {
  if (!launch.setup || launch.setup->empty()) {
    return error{errc::invalid_argument, "a Python worker needs its setup (the pickled dataset)"};
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return io_failure("socketpair", errno);
  }
  unique_fd ours(pair[0]);
  unique_fd theirs(pair[1]);
  auto pid = spawn_worker(launch, theirs.get());
  if (!pid) {
    return pid.error();
  }
  theirs.reset();
  unique_fd process(static_cast<int>(::syscall(SYS_pidfd_open, *pid, 0)));
  worker_process w(*pid, std::move(process), std::move(ours), worker_id, launch.stop_grace);
  if (!w.process_) {
    return w.failed(std::string("pidfd_open: ") + std::strerror(errno), ending_grace);
  }
  auto setup = shared_region::create("conveyor-worker-setup", launch.setup->size(),
                                     shared_region::writers::creator_only);
  if (!setup) {
    return setup.error();
  }
  std::memcpy(setup->data(), launch.setup->data(), launch.setup->size());
  const auto hello = start_message(worker_id, launch.setup->size());
  if (auto sent = send_message(w.socket(), hello.data(), hello.size(), setup->fd()); !sent) {
    return w.failed("it took no start message (" + sent.error().message() + ")", ending_grace);
  }
  auto got = receive_message(w.socket(), max_worker_message, launch.start_timeout);
  if (!got) {
    return w.failed(got.error().code() == errc::timed_out
                        ? "not ready within " + std::to_string(launch.start_timeout.count()) + " ms"
                        : "it did not start",
                    ending_grace);
  }
  auto reply = decode_reply(std::move(*got));
  if (!reply || reply->kind != reply_kind::ready) {
    return w.failed(reply ? "its start raised " + reply->exception.what() : reply.error().message(),
                    ending_grace);
  }
  return w;
}

expected<void> worker_process::ask(std::uint64_t epoch, std::uint64_t index, std::uint64_t seed) {
  if (!alive()) {
    return error{errc::worker_failed, named() + " is gone"};
  }
  const auto m = sample_message(epoch, index, seed);
  if (auto sent = send_message(socket(), m.data(), m.size()); !sent) {
    return failed("it took no sample (" + sent.error().message() + ")", ending_grace);
  }
  return {};
}

expected<worker_sample> worker_process::await(std::chrono::milliseconds timeout) {
  if (!alive()) {
    return error{errc::worker_failed, named() + " is gone"};
  }
  auto got = receive_message(socket(), max_worker_message, timeout);
  if (!got) {
    if (got.error().code() == errc::timed_out) {
      return got.error();
    }
    return failed("it answered nothing", ending_grace);
  }
  auto reply = decode_reply(std::move(*got));
  if (!reply) {
    return failed(reply.error().message(), std::chrono::milliseconds(0));
  }
  if (reply->kind == reply_kind::raised) {
    return error{errc::transform_error, "dataset[" + std::to_string(reply->exception.index) +
                                            "] raised " + reply->exception.what()};
  }
  if (reply->kind != reply_kind::done) {
    return failed("it sent a reply of another kind in answer to a sample",
                  std::chrono::milliseconds(0));
  }
  return std::move(reply->sample);
}

void worker_process::kill() noexcept {
  if (alive()) {
    (void)reap(std::chrono::milliseconds(0));
  }
}

std::string worker_process::reap(std::chrono::milliseconds grace) noexcept {
  if (!process_ || !readable_within(process_.get(), grace)) {
    ::kill(pid_, SIGKILL);
  }
  int status = 0;
  pid_t rc = 0;
  do {
    rc = ::waitpid(pid_, &status, 0);
  } while (rc < 0 && errno == EINTR);
  pid_ = -1;
  socket_.reset();
  process_.reset();
  return rc < 0 ? "was lost (waitpid: " + std::string(std::strerror(errno)) + ")"
                : ending_of(status);
}

error worker_process::failed(const std::string& why, std::chrono::milliseconds grace) {
  const auto who = named();
  const auto ending = alive() ? reap(grace) : std::string("is gone");
  return error{errc::worker_failed, who + ": " + why + "; it " + ending};
}

std::string worker_process::named() const {
  return "Python worker " + std::to_string(id_) + " (pid " + std::to_string(pid_) + ")";
}

void worker_process::request_stop() noexcept {
  if (alive()) {
    const auto bye = stop_message();
    (void)send_message(socket(), bye.data(), bye.size(), -1, false);
  }
}

void worker_process::stop() noexcept {
  if (alive()) {
    request_stop();
    (void)reap(stop_grace_);
  }
}

}  // namespace conveyor
