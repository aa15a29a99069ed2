#include "core/base/bounded_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/base/unique_fd.hpp"

namespace conveyor {
namespace {

error unreadable(const std::string& path, int code) {
  return {code == ENOENT ? errc::not_found : errc::io_error,
          path + ": cannot be read: " + std::strerror(code)};
}

/// What a file that is not a regular one is, for messages.
const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) {
    return "a FIFO";
  }
  if (S_ISCHR(mode)) {
    return "a character device";
  }
  if (S_ISBLK(mode)) {
    return "a block device";
  }
  if (S_ISDIR(mode)) {
    return "a directory";
  }
  return S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

error too_large(const std::string& path, std::size_t max_bytes) {
  return {errc::invalid_config, path + ": over " + std::to_string(max_bytes) + " bytes"};
}

/// The size of the regular file behind `fd`, at most `max_bytes`.
expected<std::size_t> checked_size(const std::string& path, int fd, std::size_t max_bytes) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return unreadable(path, errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return error{errc::invalid_config,
                 path + ": is " + kind_of(st.st_mode) + ", not a regular file"};
  }
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) {
    return too_large(path, max_bytes);
  }
  return static_cast<std::size_t>(st.st_size);
}

/// `fd` read to its end into a buffer of expected_bytes + 1 at first (the byte more shows a
/// file that grew), growing, but never past max_bytes + 1 bytes.
expected<std::string> read_to_end(const std::string& path, int fd, std::size_t expected_bytes,
                                  std::size_t max_bytes) {
  std::string bytes(expected_bytes + 1, '\0');
  std::size_t got = 0;
  for (;;) {
    if (got == bytes.size()) {
      if (got > max_bytes) {
        return too_large(path, max_bytes);
      }
      bytes.resize(std::min(max_bytes + 1, 2 * got));
    }
    const auto n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return unreadable(path, errno);
    }
    if (n == 0) {
      bytes.resize(got);
      return bytes;
    }
    got += static_cast<std::size_t>(n);
  }
}

}  // namespace

expected<std::string> read_bounded_file(const std::string& path, std::size_t max_bytes) {
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    return unreadable(path, errno);
  }
  auto size = checked_size(path, fd.get(), max_bytes);
  if (!size) {
    return std::move(size).error();
  }
  return read_to_end(path, fd.get(), *size, max_bytes);
}

}  // namespace conveyor
