#pragma once
/// A blocking call that may never return (an open(2) or stat(2) on a file system that does
/// not answer) run with a bound on how long its caller waits: the call runs on a thread of a
/// process-wide pool; a caller that has waited `bound` goes on with errc::timed_out, and the
/// call finishes alone whenever it returns (what it returned is destroyed there: a descriptor
/// it opened is closed). The pool starts threads as calls need them, up to
/// max_blocking_threads busy at once (calls past that wait their turn, within their callers'
/// bounds), and lets a thread idle for long go; handing a call over costs a few microseconds.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "conveyor/error.hpp"

namespace conveyor {

/// The most threads the pool runs calls on at once (calls that never return hold theirs).
inline constexpr std::size_t max_blocking_threads = 64;

namespace detail {
/// Runs `job` on a thread of the pool; false when no thread could be started for it (then it
/// is not run). Thread-safe.
bool run_blocking(std::function<void()> job);
}  // namespace detail

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
  const bool started = detail::run_blocking([shared, work = std::move(work)] {
    auto got = work();
    std::lock_guard<std::mutex> lock(shared->mutex);
    shared->result.emplace(std::move(got));
    shared->done.notify_one();
  });
  if (!started) {
    return error{errc::io_error, what + ": no thread to run it on"};
  }
  std::unique_lock<std::mutex> lock(shared->mutex);
  if (!shared->done.wait_for(lock, bound, [&] { return shared->result.has_value(); })) {
    return error{errc::timed_out,
                 what + ": took longer than " + std::to_string(bound.count()) + " ms"};
  }
  return std::move(*shared->result);
}

}  // namespace conveyor
