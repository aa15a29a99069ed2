#include "conveyor/run_state.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

namespace conveyor {
namespace {

error io_failure(const std::filesystem::path& file, const std::string& what, int err) {
  return {errc::io_error, file.string() + ": " + what + ": " + std::strerror(err)};
}

// Writes every byte to `fd`, through short writes and EINTR.
bool write_all(int fd, const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    auto n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// fsync of the directory that holds `file`, so that its rename survives a crash.
bool sync_directory(const std::filesystem::path& file) {
  auto dir = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

// A temporary name beside `file`, unique to this process and call.
std::filesystem::path temporary_beside(const std::filesystem::path& file) {
  static std::atomic<std::uint64_t> serial{0};
  return file.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
}

}  // namespace

expected<void> run_state::save(const std::filesystem::path& file) const {
  auto temp = temporary_beside(file);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return io_failure(file, "cannot create " + temp.filename().string(), errno);
  }
  bool written = write_all(fd, bytes.data(), bytes.size()) && ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  if (!written || ::rename(temp.c_str(), file.c_str()) != 0) {
    err = written ? errno : err;
    ::unlink(temp.c_str());
    return io_failure(file, written ? "cannot rename the new state into place" : "cannot write",
                      err);
  }
  if (!sync_directory(file)) {
    return io_failure(file, "cannot sync its directory", errno);
  }
  return {};
}

expected<run_state> run_state::load(const std::filesystem::path& file) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) {
      return error{errc::not_found, file.string() + ": no such resume state file"};
    }
    return io_failure(file, "cannot open", err);
  }
  run_state s;
  std::uint8_t chunk[65536];
  for (;;) {
    auto n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      if (n < 0) {
        return io_failure(file, "cannot read", err);
      }
      return s;
    }
    s.bytes.insert(s.bytes.end(), chunk, chunk + n);
  }
}

}  // namespace conveyor
