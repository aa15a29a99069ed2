#include "core/serving/state_key.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cerrno>
#include <cstring>

#include "core/base/little_endian.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {
namespace {

constexpr std::size_t new_key_bytes = 32;
constexpr std::size_t max_key_bytes = 4096;
constexpr char domain[] = "conveyor resume state v1";

error io_failure(const std::string& path, const char* call) {
  return {errc::io_error,
          "serve.state_key_file: " + path + ": " + call + ": " + std::strerror(errno)};
}

error unfit(const std::string& path, const std::string& why) {
  return {errc::invalid_config, "serve.state_key_file: " + path + " " + why};
}

// Writes a fresh random key to `path`, which must not exist yet.
expected<std::vector<std::uint8_t>> make_key(const std::string& path) {
  std::vector<std::uint8_t> secret(new_key_bytes);
  if (::getrandom(secret.data(), secret.size(), 0) != static_cast<ssize_t>(secret.size())) {
    return io_failure(path, "getrandom");
  }
  unique_fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) {
    return io_failure(path, "create");
  }
  if (::write(fd.get(), secret.data(), secret.size()) != static_cast<ssize_t>(secret.size()) ||
      ::fsync(fd.get()) != 0) {
    return io_failure(path, "write");
  }
  return secret;
}

// The key in the open file `fd`, checked to be this user's alone.
expected<std::vector<std::uint8_t>> read_key(const std::string& path, int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return io_failure(path, "stat");
  }
  if (!S_ISREG(st.st_mode)) {
    return unfit(path, "is not a regular file");
  }
  if (st.st_uid != ::geteuid()) {
    return unfit(path, "belongs to user " + std::to_string(st.st_uid) + ", not to this user (" +
                           std::to_string(::geteuid()) + ")");
  }
  if ((st.st_mode & 077) != 0) {
    return unfit(path, "may be read or written by its group or others (chmod 600 it)");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size < new_key_bytes || size > max_key_bytes) {
    return unfit(path, "holds " + std::to_string(size) + " bytes; a key is 32 to 4096");
  }
  std::vector<std::uint8_t> secret(size);
  if (::pread(fd, secret.data(), size, 0) != static_cast<ssize_t>(size)) {
    return io_failure(path, "read");
  }
  return secret;
}

}  // namespace

expected<state_key> state_key::load_or_make(const std::string& path) {
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd && errno == ENOENT) {
    auto made = make_key(path);
    if (!made) {
      return std::move(made).error();
    }
    return state_key(std::move(*made));
  }
  if (!fd) {
    return io_failure(path, "open");
  }
  auto secret = read_key(path, fd.get());
  if (!secret) {
    return std::move(secret).error();
  }
  return state_key(std::move(*secret));
}

std::array<std::uint8_t, 32> state_key::mac(const std::vector<std::uint8_t>& state,
                                            std::uint32_t job, std::uint32_t rank) const {
  std::vector<std::uint8_t> message(domain, domain + sizeof domain);
  std::uint8_t ids[8];
  little_endian::store(ids, job);
  little_endian::store(ids + 4, rank);
  message.insert(message.end(), ids, ids + sizeof ids);
  message.insert(message.end(), state.begin(), state.end());
  std::array<std::uint8_t, 32> out{};
  unsigned int length = 0;
  ::HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()), message.data(),
         message.size(), out.data(), &length);
  return out;
}

state_signature state_key::sign(const std::vector<std::uint8_t>& state, std::uint32_t job,
                                std::uint32_t rank) const {
  return {job, rank, mac(state, job, rank)};
}

bool state_key::verify(const signed_blob& blob, std::uint32_t job, std::uint32_t rank) const {
  if (!blob.signature || blob.signature->job != job || blob.signature->rank != rank) {
    return false;
  }
  const auto expected_mac = mac(blob.state, job, rank);
  return CRYPTO_memcmp(expected_mac.data(), blob.signature->mac.data(), expected_mac.size()) == 0;
}

}  // namespace conveyor
