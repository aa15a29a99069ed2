#include "core/storage/disk_tier.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace conveyor {
namespace {

std::string why() {
  return std::strerror(errno);
}

// A file with no name in `dir`: O_TMPFILE, or a temporary file unlinked at once.
expected<unique_fd> anonymous_file(const std::filesystem::path& dir) {
  unique_fd fd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (fd) {
    return fd;
  }
  auto name = (dir / "conveyor-cache-XXXXXX").string();
  fd.reset(::mkostemp(name.data(), O_CLOEXEC));
  if (!fd) {
    return error{errc::io_error, "cache.disk " + dir.string() + ": cannot create a file: " + why()};
  }
  ::unlink(name.c_str());
  return fd;
}

}  // namespace

disk_tier::disk_tier(unique_fd fd, std::filesystem::path dir, std::uint64_t capacity)
    : fd_(std::move(fd)), dir_(std::move(dir)), capacity_(capacity) {}

expected<std::unique_ptr<disk_tier>> disk_tier::open(const std::filesystem::path& dir,
                                                     std::uint64_t capacity) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return error{errc::not_found, "cache.disk " + dir.string() + ": not a directory"};
  }
  auto fd = anonymous_file(dir);
  if (!fd) {
    return std::move(fd).error();
  }
  return std::unique_ptr<disk_tier>(new disk_tier(std::move(*fd), dir, capacity));
}

std::optional<std::uint64_t> disk_tier::reserve(std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > capacity_ - end_) {
    return std::nullopt;
  }
  auto at = end_;
  end_ += bytes;
  return at;
}

std::uint64_t disk_tier::reserved() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return end_;
}

template <class Transfer>
expected<void> disk_tier::whole_transfer(const char* what, std::uint64_t offset, std::uint64_t size,
                                         Transfer step) const {
  std::uint64_t done = 0;
  while (done < size) {
    auto n = step(static_cast<std::size_t>(done));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return error{errc::io_error,
                   "cache.disk " + dir_.string() + ": " + what + " of " + std::to_string(size) +
                       " bytes at " + std::to_string(offset) +
                       " failed: " + (n < 0 ? why() : std::string("nothing moved"))};
    }
    done += static_cast<std::uint64_t>(n);
  }
  return {};
}

expected<void> disk_tier::write(std::uint64_t offset,
                                const std::vector<std::uint8_t>& bytes) const {
  return whole_transfer("write", offset, bytes.size(), [&](std::size_t done) {
    return ::pwrite(fd_.get(), bytes.data() + done, bytes.size() - done,
                    static_cast<off_t>(offset + done));
  });
}

expected<std::vector<std::uint8_t>> disk_tier::read(std::uint64_t offset,
                                                    std::uint64_t size) const {
  std::vector<std::uint8_t> out(size);
  auto done = whole_transfer("read", offset, size, [&](std::size_t at) {
    return ::pread(fd_.get(), out.data() + at, out.size() - at, static_cast<off_t>(offset + at));
  });
  if (!done) {
    return std::move(done).error();
  }
  return out;
}

}  // namespace conveyor
