#include "core/storage/file_slice.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "core/base/little_endian.hpp"

namespace conveyor {
namespace {

constexpr std::array<std::uint8_t, 8> magic{0, 'C', 'V', 'S', 'L', 'I', 'C', 'E'};
constexpr std::size_t fixed_bytes = magic.size() + 6 * 8 + 2;

file_identity identity_of(const struct stat& st) {
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
          static_cast<std::uint64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

/// `size` bytes of a file from `offset` on, read with pread; closes the file with it.
class slice_source final : public byte_source {
 public:
  slice_source(std::string name, int fd, std::uint64_t offset, std::uint64_t size)
      : name_(std::move(name)), fd_(fd), offset_(offset), size_(size) {}
  ~slice_source() override { ::close(fd_); }
  slice_source(const slice_source&) = delete;
  slice_source& operator=(const slice_source&) = delete;

  const std::string& name() const noexcept override { return name_; }
  std::uint64_t size() const noexcept override { return size_; }

  expected<void> read_at(std::uint64_t offset, std::uint8_t* dst, std::size_t n) const override {
    if (offset > size_ || n > size_ - offset) {
      return error{errc::io_error, name_ + ": read of " + std::to_string(n) + " bytes at offset " +
                                       std::to_string(offset) + " is past the end of the part"};
    }
    for (std::size_t done = 0; done < n;) {
      auto got = ::pread(fd_, dst + done, n - done, static_cast<off_t>(offset_ + offset + done));
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got <= 0) {
        return error{
            errc::io_error,
            name_ + ": read at offset " + std::to_string(offset_ + offset + done) +
                (got < 0 ? " failed: " + std::string(std::strerror(errno))
                         : std::string(": the file ended (truncated since it was read?)"))};
      }
      done += static_cast<std::size_t>(got);
    }
    return {};
  }

  void will_need(std::uint64_t offset, std::uint64_t n) const noexcept override {
    ::posix_fadvise(fd_, static_cast<off_t>(offset_ + offset), static_cast<off_t>(n),
                    POSIX_FADV_WILLNEED);
  }

 private:
  std::string name_;
  int fd_;
  std::uint64_t offset_;
  std::uint64_t size_;
};

}  // namespace

expected<file_identity> identify_file(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    auto code = errno == ENOENT ? errc::not_found : errc::io_error;
    return error{code, path.string() + ": " + std::strerror(errno)};
  }
  if (!S_ISREG(st.st_mode)) {
    return error{errc::io_error, path.string() + ": not a regular file"};
  }
  return identity_of(st);
}

std::vector<std::uint8_t> encode_file_slice(const file_slice& slice) {
  std::vector<std::uint8_t> out(fixed_bytes + slice.path.size());
  std::memcpy(out.data(), magic.data(), magic.size());
  auto* at = out.data() + magic.size();
  for (std::uint64_t v : {slice.offset, slice.size, slice.file.device, slice.file.inode,
                          slice.file.size, static_cast<std::uint64_t>(slice.file.mtime_ns)}) {
    little_endian::store(at, v);
    at += 8;
  }
  little_endian::store(at, static_cast<std::uint16_t>(slice.path.size()));
  std::memcpy(at + 2, slice.path.data(), slice.path.size());
  return out;
}

bool is_file_slice(const std::uint8_t* data, std::size_t size) noexcept {
  return size >= magic.size() && std::memcmp(data, magic.data(), magic.size()) == 0;
}

expected<file_slice> decode_file_slice(const std::uint8_t* data, std::size_t size) {
  if (!is_file_slice(data, size) || size < fixed_bytes) {
    return error{errc::corrupt_shard,
                 "a file slice descriptor of " + std::to_string(size) + " bytes is too short"};
  }
  const auto* at = data + magic.size();
  std::array<std::uint64_t, 6> v{};
  for (auto& x : v) {
    x = little_endian::load<std::uint64_t>(at);
    at += 8;
  }
  auto path_size = little_endian::load<std::uint16_t>(at);
  if (path_size == 0 || fixed_bytes + path_size != size) {
    return error{errc::corrupt_shard, "a file slice descriptor's path length (" +
                                          std::to_string(path_size) + ") does not match its " +
                                          std::to_string(size) + " bytes"};
  }
  file_slice out{std::string(reinterpret_cast<const char*>(at + 2), path_size), v[0], v[1],
                 file_identity{v[2], v[3], v[4], static_cast<std::int64_t>(v[5])}};
  if (out.offset > out.file.size || out.size > out.file.size - out.offset) {
    return error{errc::corrupt_shard, out.path + ": a slice of " + std::to_string(out.size) +
                                          " bytes at " + std::to_string(out.offset) +
                                          " lies outside its " + std::to_string(out.file.size) +
                                          " bytes"};
  }
  return out;
}

expected<std::shared_ptr<const byte_source>> open_file_slice(const file_slice& slice) {
  int fd = ::open(slice.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    auto code = errno == ENOENT ? errc::not_found : errc::io_error;
    return error{code, slice.path + ": cannot open: " + std::strerror(errno)};
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !(identity_of(st) == slice.file)) {
    ::close(fd);
    return error{errc::checksum_mismatch,
                 slice.path +
                     ": not the file the sample was read from (replaced or changed "
                     "since: device, inode, size or modification time differ)"};
  }
  return std::shared_ptr<const byte_source>(
      std::make_shared<slice_source>(slice.path, fd, slice.offset, slice.size));
}

}  // namespace conveyor
