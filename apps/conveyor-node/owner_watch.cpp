#include "apps/conveyor-node/owner_watch.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace conveyor {

expected<std::unique_ptr<owner_watch>> owner_watch::start(pid_t pid,
                                                          std::function<void()> on_exit) {
  unique_fd process(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!process) {
    const auto code = errno == ESRCH ? errc::not_found : errc::io_error;
    return error{code, "--owner " + std::to_string(pid) + ": " + std::strerror(errno)};
  }
  unique_fd wake(::eventfd(0, EFD_CLOEXEC));
  if (!wake) {
    return error{errc::io_error, std::string("--owner: eventfd: ") + std::strerror(errno)};
  }
  return std::unique_ptr<owner_watch>(
      new owner_watch(std::move(process), std::move(wake), std::move(on_exit)));
}

owner_watch::owner_watch(unique_fd process, unique_fd wake, std::function<void()> on_exit)
    : process_(std::move(process)), wake_(std::move(wake)), on_exit_(std::move(on_exit)) {
  watcher_ = std::thread([this] { watch(); });
}

owner_watch::~owner_watch() {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto written = ::write(wake_.get(), &one, sizeof one);
  watcher_.join();
}

void owner_watch::watch() {
  pollfd fds[2] = {{process_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
  for (;;) {
    // No timeout: the process's end or the destructor wakes it, and nothing else is waited for.
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      return;
    }
    if (fds[1].revents != 0) {
      return;
    }
    if (fds[0].revents != 0) {
      on_exit_();
      return;
    }
  }
}

}  // namespace conveyor
