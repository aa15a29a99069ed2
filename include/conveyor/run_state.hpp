#pragma once
/// Where a run stands, to resume it after a stop (preemption, a crash, a planned restart):
/// which samples the trainer has received so far. pipeline::state() and client::state() take
/// it; pipeline::open(..., resume) and client::attach(..., resume) go on from it, delivering
/// exactly the samples of each epoch not received yet, then the later epochs as if never
/// interrupted (the same order, the same per-sample random transforms). Only batches the
/// trainer received (next() returned them) before the state was taken count.
///
/// The bytes are opaque, small (about 600 bytes for a 1.28 M-sample epoch delivered nearly in
/// order, at most about 160 KB), versioned and checksummed: a damaged, truncated or foreign
/// state, or one of another run (dataset, seed, shuffle or epochs), is refused with an error
/// that says why, never read as a fresh start.

#include <cstdint>
#include <filesystem>
#include <vector>

#include "conveyor/error.hpp"

namespace conveyor {

struct run_state {
  std::vector<std::uint8_t> bytes;

  /// Writes the state to `file` atomically: a temporary file beside it, fsync, rename, fsync of
  /// the directory. A reader (or a crash) sees the old state or the new one, never a mix.
  /// errc::io_error naming the file.
  expected<void> save(const std::filesystem::path& file) const;
  /// The state saved in `file`: errc::not_found or errc::io_error naming it. Whether the bytes
  /// are a state of the right run is checked where it is used (open, attach).
  static expected<run_state> load(const std::filesystem::path& file);
};

}  // namespace conveyor
