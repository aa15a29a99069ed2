#pragma once
/// How conveyor-node hears Ctrl-C (SIGINT) and SIGTERM: the two signals are blocked in every
/// thread of the process and taken by one watcher thread with sigwait, which calls `on_stop`
/// once with the signal's number. A signal's action inherited as "ignore" (a background job of
/// a non-interactive shell has SIGINT ignored) is reset first: an operator's kill -INT always
/// stops the node.
///
/// Construct it in main before any other thread starts (threads inherit the blocked mask);
/// one instance per process. The destructor ends the watcher; `on_stop` never runs after it.

#include <atomic>
#include <functional>
#include <thread>

namespace conveyor {

class stop_signals {
 public:
  explicit stop_signals(std::function<void(int)> on_stop);
  ~stop_signals();
  stop_signals(const stop_signals&) = delete;
  stop_signals& operator=(const stop_signals&) = delete;

  /// The stop signal received (SIGINT or SIGTERM), or 0 when none came.
  int received() const noexcept { return received_.load(std::memory_order_acquire); }
  /// The conventional exit code after `received()`: 128 + the signal number (130 for SIGINT,
  /// 143 for SIGTERM); 0 when no signal came.
  int exit_code() const noexcept { return received() == 0 ? 0 : 128 + received(); }

 private:
  void watch();

  std::function<void(int)> on_stop_;
  std::atomic<int> received_{0};
  std::thread watcher_;
};

}  // namespace conveyor
