#include "core/base/private_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/unique_fd.hpp"

namespace conveyor {
namespace {

error failed(const std::string& path, errc code, const std::string& why) {
  return {code, path + ": " + why};
}

error io_failed(const std::string& path) {
  return failed(path, errno == ENOENT ? errc::not_found : errc::io_error, std::strerror(errno));
}

// The file behind `fd` may hold a secret of this user's.
expected<std::size_t> private_size(const std::string& path, int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return io_failed(path);
  }
  if (!S_ISREG(st.st_mode)) {
    return failed(path, errc::invalid_config, "not a regular file");
  }
  if (st.st_uid != ::geteuid()) {
    return failed(path, errc::permission_denied,
                  "belongs to user " + std::to_string(st.st_uid) + ", not to this user (" +
                      std::to_string(::geteuid()) + ")");
  }
  if ((st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH)) != 0) {
    return failed(path, errc::permission_denied,
                  "its group or others may read or write it (chmod 600 " + path + ")");
  }
  return static_cast<std::size_t>(st.st_size);
}

}  // namespace

expected<std::vector<std::uint8_t>> read_private_file(const std::string& path,
                                                      std::size_t min_bytes,
                                                      std::size_t max_bytes) {
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    return io_failed(path);
  }
  auto size = private_size(path, fd.get());
  if (!size) {
    return std::move(size).error();
  }
  if (*size < min_bytes || *size > max_bytes) {
    return failed(path, errc::invalid_config,
                  "holds " + std::to_string(*size) + " bytes; it must hold " +
                      std::to_string(min_bytes) + " to " + std::to_string(max_bytes));
  }
  std::vector<std::uint8_t> bytes(*size);
  std::size_t got = 0;
  while (got < bytes.size()) {
    auto n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return failed(path, errc::io_error, n < 0 ? std::strerror(errno) : "shorter than its size");
    }
    got += static_cast<std::size_t>(n);
  }
  return bytes;
}

expected<void> create_private_file(const std::string& path,
                                   const std::vector<std::uint8_t>& bytes) {
  unique_fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) {
    return io_failed(path);
  }
  if (::write(fd.get(), bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()) ||
      ::fsync(fd.get()) != 0) {
    return io_failed(path);
  }
  return {};
}

}  // namespace conveyor
