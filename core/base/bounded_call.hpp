#pragma once
/// A blocking call that may never return (an open(2) or stat(2) on a file system that does
/// not answer) run with a bound on how long its caller waits: the call runs on a thread of its
/// own; a caller that has waited `bound` goes on with errc::timed_out, and the thread finishes
/// alone whenever the call returns (what it returned is destroyed there: a descriptor it
/// opened is closed). A thread per call: for calls that cost far more than starting one
/// (a file's open is 10-20 us against a few us for the thread), never for a hot inner loop.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "conveyor/error.hpp"

namespace conveyor {

/// What `work` returns, or errc::timed_out ("<what>: took longer than <bound> ms") when it
/// has not returned within `bound`, or errc::io_error when no thread could be started for it.
/// `work` must own everything it uses (it may outlive the caller). Thread-safe.
template <class T>
expected<T> call_within(std::chrono::milliseconds bound, const std::string& what,
                        std::function<expected<T>()> work) {
  struct handoff {
    std::mutex mutex;
    std::condition_variable done;
    std::optional<expected<T>> result;
  };
  auto shared = std::make_shared<handoff>();
  try {
    std::thread([shared, work = std::move(work)] {
      auto got = work();
      std::lock_guard<std::mutex> lock(shared->mutex);
      shared->result.emplace(std::move(got));
      shared->done.notify_one();
    }).detach();
  } catch (const std::system_error& e) {
    return error{errc::io_error, what + ": no thread to run it on (" + e.what() + ")"};
  }
  std::unique_lock<std::mutex> lock(shared->mutex);
  if (!shared->done.wait_for(lock, bound, [&] { return shared->result.has_value(); })) {
    return error{errc::timed_out,
                 what + ": took longer than " + std::to_string(bound.count()) + " ms"};
  }
  return std::move(*shared->result);
}

}  // namespace conveyor
