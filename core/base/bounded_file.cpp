#include "core/base/bounded_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/base/regular_file.hpp"

namespace conveyor {
namespace {

error unreadable(const std::string& path, int code) {
  return {code == ENOENT ? errc::not_found : errc::io_error,
          path + ": cannot be read: " + std::strerror(code)};
}

error too_large(const std::string& path, std::size_t max_bytes) {
  return {errc::invalid_config, path + ": over " + std::to_string(max_bytes) + " bytes"};
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
  auto file = open_regular_file(path);
  if (!file) {
    return std::move(file).error();
  }
  if (file->identity.size > max_bytes) {
    return too_large(path, max_bytes);
  }
  return read_to_end(path, file->fd.get(), static_cast<std::size_t>(file->identity.size),
                     max_bytes);
}

}  // namespace conveyor
