#pragma once
/// conveyor-node --checkpoint FILE: the run's state (pipeline::state()) written to FILE,
/// atomically (conveyor/run_state.hpp), at start, every trainer.checkpoint_every batches the
/// trainers receive, and at the end (also after Ctrl-C). conveyor-node --resume FILE goes on
/// from the last one: after a crash, exactly the samples it did not cover come again.

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>

#include "conveyor/pipeline.hpp"

namespace conveyor {

/// Thread-safe: every trainer thread calls on_batch().
class checkpointer {
 public:
  /// Writes the state of `p` to `file` once now: errc::io_error naming the file and
  /// --checkpoint when it cannot (a start-up error).
  static expected<checkpointer> start(const pipeline& p, std::filesystem::path file,
                                      std::uint64_t every);

  checkpointer(checkpointer&& other) noexcept;

  /// A trainer received a batch: every `every`-th one writes the state. False once a write
  /// failed (logged; failure() says why): the run should stop rather than go on unsaved.
  bool on_batch();
  /// Writes the state now (the end of the run). False when it failed.
  bool write_now();
  std::optional<error> failure() const;

 private:
  checkpointer(const pipeline& p, std::filesystem::path file, std::uint64_t every)
      : pipeline_(&p), file_(std::move(file)), every_(every) {}
  bool write_locked();

  mutable std::mutex mutex_;
  const pipeline* pipeline_;
  std::filesystem::path file_;
  std::uint64_t every_;
  std::uint64_t batches_ = 0;
  std::optional<error> failure_;
};

}  // namespace conveyor
