#include "apps/conveyor-node/stop_signals.hpp"

#include <pthread.h>

#include <csignal>

namespace conveyor {
namespace {

// SIGUSR1 is only the destructor's way to wake the watcher; it never stops the node.
sigset_t watched_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  return set;
}

}  // namespace

stop_signals::stop_signals(std::function<void(int)> on_stop) : on_stop_(std::move(on_stop)) {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  auto set = watched_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  watcher_ = std::thread([this] { watch(); });
}

stop_signals::~stop_signals() {
  pthread_kill(watcher_.native_handle(), SIGUSR1);
  watcher_.join();
}

void stop_signals::watch() {
  auto set = watched_signals();
  int sig = 0;
  if (sigwait(&set, &sig) != 0 || sig == SIGUSR1) {
    return;
  }
  received_.store(sig, std::memory_order_release);
  on_stop_(sig);
  // A second signal has nothing left to stop; the destructor's SIGUSR1 ends the wait.
  while (sigwait(&set, &sig) == 0 && sig != SIGUSR1) {
  }
}

}  // namespace conveyor
