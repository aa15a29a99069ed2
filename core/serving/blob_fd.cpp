#include "core/serving/blob_fd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace conveyor {
namespace {

error io_failure(const std::string& what) {
  return {errc::io_error, what + ": " + std::strerror(errno)};
}

}  // namespace

expected<unique_fd> blob_fd(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  unique_fd fd(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) {
    return io_failure("memfd_create(" + name + ")");
  }
  std::size_t done = 0;
  while (done < bytes.size()) {
    auto n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return io_failure("writing " + name);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) !=
      0) {
    return io_failure("sealing " + name);
  }
  return fd;
}

expected<std::vector<std::uint8_t>> read_blob_fd(int fd, std::uint64_t size, std::uint64_t limit,
                                                 const std::string& what) {
  struct stat st {};
  if (size > limit) {
    return error{errc::invalid_argument, what + ": " + std::to_string(size) +
                                             " bytes, more than the " + std::to_string(limit) +
                                             " allowed"};
  }
  if (::fstat(fd, &st) != 0) {
    return io_failure(what);
  }
  // Only a sealed memfd: its pages are memory (a read never waits on a device or a network
  // file system) and nobody can change or cut them while they are read.
  const int seals = S_ISREG(st.st_mode) ? ::fcntl(fd, F_GET_SEALS) : -1;
  const int needed = F_SEAL_SHRINK | F_SEAL_WRITE;
  if (seals < 0 || (seals & needed) != needed) {
    return error{errc::invalid_argument,
                 what +
                     ": not a sealed memfd (the descriptor must be a memfd sealed against "
                     "writes and shrinking)"};
  }
  if (static_cast<std::uint64_t>(st.st_size) < size) {
    return error{errc::invalid_argument, what + ": " + std::to_string(st.st_size) +
                                             " bytes where " + std::to_string(size) +
                                             " were announced"};
  }
  std::vector<std::uint8_t> out(static_cast<std::size_t>(size));
  std::size_t done = 0;
  while (done < out.size()) {
    auto n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return io_failure(what);
    }
    done += static_cast<std::size_t>(n);
  }
  return out;
}

}  // namespace conveyor
