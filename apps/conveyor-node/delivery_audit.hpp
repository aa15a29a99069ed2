#pragma once
/// trainer.ids_file: the node's record of every sample its trainers received, a line
/// "<epoch> <sample id>" each, appended batch by batch with one write(2), so that a node killed
/// at any point leaves whole batches behind. Tests and users audit exactly-once delivery with
/// it (across a kill and a resume too).

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>

#include "conveyor/pipeline.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {

/// Thread-safe: every trainer thread records into one audit.
class delivery_audit {
 public:
  /// Creates or empties `path`; errc::io_error naming it (and trainer.ids_file) when it cannot.
  static expected<delivery_audit> open(const std::filesystem::path& path);

  delivery_audit(delivery_audit&& other) noexcept;
  delivery_audit& operator=(delivery_audit&&) = delete;
  delivery_audit(const delivery_audit&) = delete;
  delivery_audit& operator=(const delivery_audit&) = delete;
  ~delivery_audit() = default;

  /// Appends the batch's samples. The first failure is kept (failure()) and ends the recording:
  /// an audit with holes would mislead.
  void record(const batch& b);
  std::optional<error> failure() const;

 private:
  delivery_audit(std::filesystem::path path, unique_fd fd)
      : path_(std::move(path)), fd_(std::move(fd)) {}

  std::filesystem::path path_;
  mutable std::mutex mutex_;
  unique_fd fd_;
  std::optional<error> failure_;
};

}  // namespace conveyor
