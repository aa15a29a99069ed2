#pragma once
/// Frees what device work may still use once that work has completed, without making anyone
/// wait for it: a ring dropped by its last batch on the trainer's thread must not block the
/// trainer while the trainer's own queued work runs. One process-wide thread polls each entry
/// (about every millisecond) until it settles (its resources are then dropped, on that
/// thread), fails, or its deadline passes (its leak() runs: the memory is kept for ever rather
/// than freed under running work, with an error in the log). At process exit, entries still
/// pending are leaked.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "conveyor/error.hpp"

namespace conveyor {

struct deferred_teardown {
  using clock = std::chrono::steady_clock;
  std::string what;  ///< "feeder 0's slots on the CUDA device 0": for the log
  clock::time_point deadline;
  /// True once the work is complete and `resources` may go; an error when it cannot be told.
  std::function<expected<bool>()> settled;
  /// Keeps the memory that the work may use for ever (the work did not settle).
  std::function<void()> leak;
  /// Dropped once settled (after leak() otherwise).
  std::shared_ptr<void> resources;
};

/// Queues `t` for the teardown thread (started on first use). Thread-safe; never blocks on
/// device work.
void defer_teardown(deferred_teardown t);

/// Waits until no teardown is pending (true) or `deadline` passes (false): for tests and for
/// an orderly exit.
bool wait_for_teardowns(deferred_teardown::clock::time_point deadline);

}  // namespace conveyor
