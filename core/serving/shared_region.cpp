#include "core/serving/shared_region.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace conveyor {
namespace {

error io_failure(const std::string& what) {
  return {errc::io_error, what + ": " + std::strerror(errno)};
}

// Size can never change (a shrink would SIGBUS the readers); no more seals can be added.
constexpr int size_seals = F_SEAL_SHRINK | F_SEAL_GROW;

}  // namespace

expected<shared_region> shared_region::create(const std::string& name, std::size_t bytes,
                                              writers who) {
  if (bytes == 0) {
    return error{errc::invalid_argument, "shared region " + name + ": size 0"};
  }
  unique_fd fd(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) {
    return io_failure("memfd_create(" + name + ")");
  }
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    return io_failure("ftruncate(" + name + ", " + std::to_string(bytes) + ")");
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) {
    return io_failure("mmap(" + name + ", " + std::to_string(bytes) + ")");
  }
  shared_region region(std::move(fd), static_cast<std::uint8_t*>(p), bytes, true);
  // Sealed after our own writable mapping: FUTURE_WRITE leaves that one writable.
  int seals = size_seals | (who == writers::creator_only ? F_SEAL_FUTURE_WRITE : 0);
  if (::fcntl(region.fd(), F_ADD_SEALS, seals | F_SEAL_SEAL) != 0) {
    return io_failure("sealing " + name);
  }
  return region;
}

expected<shared_region> shared_region::attach(unique_fd fd, bool writable) {
  int seals = ::fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0 || (seals & size_seals) != size_seals) {
    return error{errc::invalid_argument, "descriptor " + std::to_string(fd.get()) +
                                             " is not a size-sealed memfd region (seals " +
                                             std::to_string(seals) + ")"};
  }
  if (writable && (seals & F_SEAL_FUTURE_WRITE) != 0) {
    return error{errc::invalid_argument,
                 "the region's creator sealed it against writes: attach it read-only"};
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return io_failure("fstat of a shared region");
  }
  auto bytes = static_cast<std::size_t>(st.st_size);
  int prot = PROT_READ | (writable ? PROT_WRITE : 0);
  void* p = ::mmap(nullptr, bytes, prot, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) {
    return io_failure("mmap of a shared region of " + std::to_string(bytes) + " bytes");
  }
  return shared_region(std::move(fd), static_cast<std::uint8_t*>(p), bytes, writable);
}

shared_region::shared_region(shared_region&& o) noexcept
    : fd_(std::move(o.fd_)),
      data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      writable_(o.writable_) {}

shared_region& shared_region::operator=(shared_region&& o) noexcept {
  if (this != &o) {
    unmap();
    fd_ = std::move(o.fd_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    writable_ = o.writable_;
  }
  return *this;
}

shared_region::~shared_region() {
  unmap();
}

void shared_region::unmap() noexcept {
  if (data_ != nullptr) {
    ::munmap(data_, size_);
    data_ = nullptr;
  }
}

}  // namespace conveyor
