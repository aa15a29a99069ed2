#pragma once
/// A block of memory shared between processes: an anonymous memfd (memfd_create), never a file
/// under /dev/shm, whose size containers cap (64 MB by default) so that touching a page past it
/// kills the reader with SIGBUS. The creator maps it read-write and seals its size (a shrunk
/// region would SIGBUS its readers); another process gets the descriptor (fd_passing.hpp) and
/// attaches. With `writers::creator_only` the creator also seals it against writes through any
/// other mapping: readers can then map it read-only and nothing else.
///
/// Owns the descriptor and the mapping (munmap and close on destruction). Move-only. The bytes
/// themselves are shared: who writes a part and when the other side may read it is the
/// protocol's business (a slot is reused only after its reader released it).

#include <cstddef>
#include <cstdint>
#include <string>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {

class shared_region {
 public:
  enum class writers : std::uint8_t {
    anyone,        ///< readers may map it read-write too (e.g. to work on a batch in place)
    creator_only,  ///< sealed (F_SEAL_FUTURE_WRITE): other mappings are read-only
  };

  /// A zero-filled region of `bytes` (> 0), mapped read-write. `name` shows in
  /// /proc/<pid>/maps as "/memfd:<name>". errc::io_error naming the call that failed.
  static expected<shared_region> create(const std::string& name, std::size_t bytes,
                                        writers who = writers::anyone);
  /// Maps the region behind `fd` (received from its creator), whole; takes ownership of `fd`.
  /// `writable`: map it read-write (refused with errc::invalid_argument when the creator sealed
  /// it for itself). errc::invalid_argument when `fd` is not a sealed memfd region.
  static expected<shared_region> attach(unique_fd fd, bool writable);

  shared_region(shared_region&& o) noexcept;
  shared_region& operator=(shared_region&& o) noexcept;
  shared_region(const shared_region&) = delete;
  shared_region& operator=(const shared_region&) = delete;
  ~shared_region();

  std::uint8_t* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool writable() const noexcept { return writable_; }
  /// The descriptor, to pass to another process (it stays owned here).
  int fd() const noexcept { return fd_.get(); }

 private:
  shared_region(unique_fd fd, std::uint8_t* data, std::size_t size, bool writable) noexcept
      : fd_(std::move(fd)), data_(data), size_(size), writable_(writable) {}
  void unmap() noexcept;

  unique_fd fd_;
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  bool writable_ = false;
};

}  // namespace conveyor
