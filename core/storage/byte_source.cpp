#include "core/storage/byte_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/regular_file.hpp"

namespace conveyor {
namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

/// Bytes [base, base + size) of an open file, read with pread; the descriptor is closed with
/// the source.
class file_source final : public byte_source {
 public:
  file_source(std::string name, unique_fd fd, std::uint64_t base, std::uint64_t size)
      : name_(std::move(name)), fd_(std::move(fd)), base_(base), size_(size) {}

  const std::string& name() const noexcept override { return name_; }
  std::uint64_t size() const noexcept override { return size_; }

  expected<void> read_at(std::uint64_t offset, std::uint8_t* dst, std::size_t n) const override {
    if (offset > size_ || n > size_ - offset) {
      return error{errc::io_error, name_ + ": a read of " + std::to_string(n) +
                                       " bytes at offset " + std::to_string(offset) +
                                       " runs past its " + std::to_string(size_) + " bytes"};
    }
    std::size_t done = 0;
    while (done < n) {
      const auto at = base_ + offset + done;
      auto got = ::pread(fd_.get(), dst + done, n - done, static_cast<off_t>(at));
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got < 0) {
        return error{errc::io_error, name_ + ": read of " + std::to_string(n) +
                                         " bytes at offset " + std::to_string(base_ + offset) +
                                         " failed: " + errno_text(errno)};
      }
      if (got == 0) {
        return error{errc::io_error, name_ + ": unexpected end of file at offset " +
                                         std::to_string(at) + " (truncated since it was opened?)"};
      }
      done += static_cast<std::size_t>(got);
    }
    return {};
  }

  void will_need(std::uint64_t offset, std::uint64_t n) const noexcept override {
    ::posix_fadvise(fd_.get(), static_cast<off_t>(base_ + offset), static_cast<off_t>(n),
                    POSIX_FADV_WILLNEED);
  }

 private:
  std::string name_;
  unique_fd fd_;
  std::uint64_t base_;
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
  auto file = open_regular_file(path);
  if (!file) {
    return std::move(file).error();
  }
  const auto size = file->identity.size;
  return make_file_source(std::move(file->fd), path.string(), 0, size);
}

std::shared_ptr<const byte_source> make_file_source(unique_fd fd, std::string name,
                                                    std::uint64_t offset, std::uint64_t size) {
  return std::make_shared<file_source>(std::move(name), std::move(fd), offset, size);
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
