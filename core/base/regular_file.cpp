#include "core/base/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/base/bounded_call.hpp"

namespace conveyor {
namespace {

file_identity identity_of(const struct stat& st) {
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
          static_cast<std::uint64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
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

error not_regular(const std::filesystem::path& path, mode_t mode) {
  return error{errc::io_error, path.string() + ": is " + kind_of(mode) + ", not a regular file"};
}

error failed(const std::filesystem::path& path, const char* what, int err) {
  return error{err == ENOENT ? errc::not_found : errc::io_error,
               path.string() + ": " + what + ": " + std::strerror(err)};
}

// stat, open, fstat: may block as long as the file system does.
expected<regular_file> open_now(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return failed(path, "cannot open", errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return not_regular(path, st.st_mode);
  }
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) {
    return failed(path, "cannot open", errno);
  }
  if (::fstat(fd.get(), &st) != 0) {
    return failed(path, "cannot stat", errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return not_regular(path, st.st_mode);
  }
  return regular_file{std::move(fd), identity_of(st)};
}

}  // namespace

expected<regular_file> open_regular_file(const std::filesystem::path& path,
                                         std::chrono::milliseconds bound) {
  return call_within<regular_file>(bound, "opening " + path.string(),
                                   [path] { return open_now(path); });
}

expected<file_identity> identify_file(const std::filesystem::path& path,
                                      std::chrono::milliseconds bound) {
  auto file = open_regular_file(path, bound);
  if (!file) {
    return std::move(file).error();
  }
  return file->identity;
}

}  // namespace conveyor
