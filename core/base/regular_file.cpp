#include "core/base/regular_file.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <shared_mutex>
#include <unordered_set>

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

// The file systems on which a call waits on nothing but this machine: disks, memory, overlays.
bool local_file_system(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) {
    return false;
  }
  switch (static_cast<unsigned long>(fs.f_type)) {  // NOLINT(google-runtime-int): statfs's
    case EXT4_SUPER_MAGIC:                          // ext2, ext3 and ext4
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case RAMFS_MAGIC:
    case OVERLAYFS_SUPER_MAGIC:
    case SQUASHFS_MAGIC:
    case F2FS_SUPER_MAGIC:
    case MSDOS_SUPER_MAGIC:
    case 0x2fc12fc1:  // ZFS
      return true;
    default:
      return false;
  }
}

/// Directories (absolute paths) on a local file system: a file in one that is no link opens on
/// its caller's thread. Learnt from the opens made on the pool; bounded in size.
class local_directories {
 public:
  bool has(const std::string& dir) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return dirs_.count(dir) != 0;
  }
  void add(const std::string& dir) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    if (dirs_.size() < max_dirs) {
      dirs_.insert(dir);
    }
  }

 private:
  static constexpr std::size_t max_dirs = 1 << 16;
  mutable std::shared_mutex mutex_;
  std::unordered_set<std::string> dirs_;
};

local_directories& local_dirs() {
  static local_directories dirs;
  return dirs;
}

// The file at `path`, in a directory on a local file system, opened here: nullopt when it is a
// link (it may lead anywhere: the bounded way takes it).
std::optional<expected<regular_file>> open_in_local_directory(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return expected<regular_file>(failed(path, "cannot open", errno));
  }
  if (S_ISLNK(st.st_mode)) {
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    return expected<regular_file>(not_regular(path, st.st_mode));
  }
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW));
  if (!fd) {
    return errno == ELOOP
               ? std::nullopt  // made a link since the lstat
               : std::optional(expected<regular_file>(failed(path, "cannot open", errno)));
  }
  if (::fstat(fd.get(), &st) != 0) {
    return expected<regular_file>(failed(path, "cannot stat", errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return expected<regular_file>(not_regular(path, st.st_mode));
  }
  return expected<regular_file>(regular_file{std::move(fd), identity_of(st)});
}

// open_now on the pool, within `bound`; a file that is no link, on a local file system, teaches
// that its directory is local.
expected<regular_file> open_on_pool(const std::filesystem::path& path,
                                    std::chrono::milliseconds bound) {
  return call_within<regular_file>(bound, "opening " + path.string(), [path] {
    auto opened = open_now(path);
    struct stat st {};
    if (opened && path.is_absolute() && ::lstat(path.c_str(), &st) == 0 && !S_ISLNK(st.st_mode) &&
        local_file_system(opened->fd.get())) {
      local_dirs().add(path.parent_path().string());
    }
    return opened;
  });
}

}  // namespace

expected<regular_file> open_regular_file(const std::filesystem::path& path,
                                         std::chrono::milliseconds bound) {
  if (path.is_absolute() && local_dirs().has(path.parent_path().string())) {
    if (auto here = open_in_local_directory(path)) {
      return std::move(*here);
    }
  }
  return open_on_pool(path, bound);
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
