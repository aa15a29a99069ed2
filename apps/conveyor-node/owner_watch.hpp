#pragma once
/// `--owner PID`: a node started for one process (conveyor.DataLoader's private node) stops
/// when that process ends, however it ends (SIGKILL, the OOM killer, a crash), so that no node
/// and no Python worker outlives its trainer. A thread waits on the process's pidfd (and on an
/// eventfd the destructor writes) and calls `on_exit` once when the process is gone. Unlike
/// PR_SET_PDEATHSIG it follows the process, not the thread that started the node.

#include <sys/types.h>

#include <functional>
#include <memory>
#include <thread>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {

class owner_watch {
 public:
  /// Watches process `pid`; errc::not_found when no such process runs (it has ended already),
  /// errc::io_error when it cannot be watched.
  static expected<std::unique_ptr<owner_watch>> start(pid_t pid, std::function<void()> on_exit);
  ~owner_watch();
  owner_watch(const owner_watch&) = delete;
  owner_watch& operator=(const owner_watch&) = delete;

 private:
  owner_watch(unique_fd process, unique_fd wake, std::function<void()> on_exit);
  void watch();

  unique_fd process_;
  unique_fd wake_;
  std::function<void()> on_exit_;
  std::thread watcher_;
};

}  // namespace conveyor
