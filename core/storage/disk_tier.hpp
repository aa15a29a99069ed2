#pragma once
/// A cache's local-disk tier (cache.disk): encoded samples appended to one anonymous file in a
/// directory on a local disk (an NVMe drive beside remote storage), up to a capacity, and read
/// back by offset. The file has no name (O_TMPFILE, or unlinked at once where the file system
/// lacks it): it is gone with the process, also after a crash, and nothing is left to clean up.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {

/// Thread-safe: readers reserve, write and read concurrently.
class disk_tier {
 public:
  /// A tier of `capacity` bytes in directory `dir`. Errors (io_error, not_found) name `dir`.
  static expected<std::unique_ptr<disk_tier>> open(const std::filesystem::path& dir,
                                                   std::uint64_t capacity);

  /// Room for `bytes` more: their offset, or nullopt when they do not fit. Space reserved is
  /// never given back (a tier only grows, as its cache never evicts).
  std::optional<std::uint64_t> reserve(std::uint64_t bytes);
  /// Writes `bytes` at `offset` (reserved for them). io_error on a failed or short write.
  expected<void> write(std::uint64_t offset, const std::vector<std::uint8_t>& bytes) const;
  /// The `size` bytes at `offset`. io_error on a failed or short read.
  expected<std::vector<std::uint8_t>> read(std::uint64_t offset, std::uint64_t size) const;

  std::uint64_t capacity() const noexcept { return capacity_; }
  std::uint64_t reserved() const;
  const std::filesystem::path& directory() const noexcept { return dir_; }

 private:
  disk_tier(unique_fd fd, std::filesystem::path dir, std::uint64_t capacity);
  // Calls step(bytes done so far), a pread or pwrite, until `size` bytes moved.
  template <class Transfer>
  expected<void> whole_transfer(const char* what, std::uint64_t offset, std::uint64_t size,
                                Transfer step) const;

  unique_fd fd_;
  std::filesystem::path dir_;
  std::uint64_t capacity_ = 0;
  mutable std::mutex mutex_;
  std::uint64_t end_ = 0;  ///< bytes reserved so far
};

}  // namespace conveyor
