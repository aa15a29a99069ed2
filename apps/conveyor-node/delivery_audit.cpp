#include "apps/conveyor-node/delivery_audit.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace conveyor {
namespace {

error io_failure(const std::filesystem::path& path, const char* what) {
  return error{errc::io_error,
               "trainer.ids_file " + path.string() + ": " + what + ": " + std::strerror(errno)};
}

/// Writes all of `text`; false (errno set) when the file refuses it.
bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

expected<delivery_audit> delivery_audit::open(const std::filesystem::path& path) {
  unique_fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644));
  if (!fd) {
    return io_failure(path, "cannot create it");
  }
  return delivery_audit(path, std::move(fd));
}

delivery_audit::delivery_audit(delivery_audit&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::move(other.fd_)),
      failure_(std::move(other.failure_)) {}

void delivery_audit::record(const batch& b) {
  std::string lines;
  const auto epoch = std::to_string(b.epoch());
  for (auto id : b.sample_ids()) {
    lines += epoch;
    lines += ' ';
    lines += std::to_string(id);
    lines += '\n';
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_ || lines.empty()) {
    return;
  }
  if (!write_all(fd_.get(), lines)) {
    failure_ = io_failure(path_, "cannot append to it");
  }
}

std::optional<error> delivery_audit::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

}  // namespace conveyor
