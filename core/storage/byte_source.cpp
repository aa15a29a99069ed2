#include "core/storage/byte_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace conveyor {
namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

/// A file read with pread; the descriptor is closed with the source.
class file_source final : public byte_source {
 public:
  file_source(std::string name, int fd, std::uint64_t size)
      : name_(std::move(name)), fd_(fd), size_(size) {}
  ~file_source() override { ::close(fd_); }
  file_source(const file_source&) = delete;
  file_source& operator=(const file_source&) = delete;

  const std::string& name() const noexcept override { return name_; }
  std::uint64_t size() const noexcept override { return size_; }

  expected<void> read_at(std::uint64_t offset, std::uint8_t* dst, std::size_t n) const override {
    std::size_t done = 0;
    while (done < n) {
      auto got = ::pread(fd_, dst + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got < 0) {
        return error{errc::io_error, name_ + ": read of " + std::to_string(n) +
                                         " bytes at offset " + std::to_string(offset) +
                                         " failed: " + errno_text(errno)};
      }
      if (got == 0) {
        return error{errc::io_error,
                     name_ + ": unexpected end of file at offset " + std::to_string(offset + done)};
      }
      done += static_cast<std::size_t>(got);
    }
    return {};
  }

  void will_need(std::uint64_t offset, std::uint64_t n) const noexcept override {
    ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(n), POSIX_FADV_WILLNEED);
  }

 private:
  std::string name_;
  int fd_;
  std::uint64_t size_;
};

/// Bytes in memory, owned (`bytes_`) or viewed.
class memory_source final : public byte_source {
 public:
  memory_source(std::vector<std::uint8_t> bytes, std::string name)
      : bytes_(std::move(bytes)),
        data_(bytes_.data()),
        size_(bytes_.size()),
        name_(std::move(name)) {}
  memory_source(const std::uint8_t* data, std::size_t size, std::string name)
      : data_(data), size_(size), name_(std::move(name)) {}

  const std::string& name() const noexcept override { return name_; }
  std::uint64_t size() const noexcept override { return size_; }

  expected<void> read_at(std::uint64_t offset, std::uint8_t* dst, std::size_t n) const override {
    if (offset > size_ || n > size_ - offset) {
      return error{errc::io_error, name_ + ": read of " + std::to_string(n) + " bytes at offset " +
                                       std::to_string(offset) + " is past the end"};
    }
    if (n > 0) {
      std::memcpy(dst, data_ + offset, n);
    }
    return {};
  }

 private:
  std::vector<std::uint8_t> bytes_;
  const std::uint8_t* data_;
  std::size_t size_;
  std::string name_;
};

}  // namespace

void byte_source::will_need(std::uint64_t, std::uint64_t) const noexcept {}

expected<std::shared_ptr<const byte_source>> open_file_source(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    auto code = errno == ENOENT ? errc::not_found : errc::io_error;
    return error{code, path.string() + ": cannot open: " + errno_text(errno)};
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return error{errc::io_error, path.string() + ": not a regular file"};
  }
  return std::shared_ptr<const byte_source>(
      std::make_shared<file_source>(path.string(), fd, static_cast<std::uint64_t>(st.st_size)));
}

expected<std::vector<std::uint8_t>> read_whole_file(const std::filesystem::path& path) {
  auto file = open_file_source(path);
  if (!file) {
    return std::move(file).error();
  }
  std::vector<std::uint8_t> bytes((*file)->size());
  if (auto ok = (*file)->read_at(0, bytes.data(), bytes.size()); !ok) {
    return std::move(ok).error();
  }
  return bytes;
}

std::shared_ptr<const byte_source> make_memory_source(std::vector<std::uint8_t> bytes,
                                                      std::string name) {
  return std::make_shared<memory_source>(std::move(bytes), std::move(name));
}

std::shared_ptr<const byte_source> make_view_source(const std::uint8_t* data, std::size_t size,
                                                    std::string name) {
  return std::make_shared<memory_source>(data, size, std::move(name));
}

}  // namespace conveyor
