#include "core/cluster/run_secret.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "core/base/little_endian.hpp"
#include "core/base/unique_fd.hpp"

namespace conveyor {
namespace {

// Keeps a proof of this protocol from being taken for anything else made with the secret.
constexpr char domain[] = "conveyor peer hello";

std::vector<std::uint8_t> encoded(const proof_subject& s) {
  const std::array<std::uint64_t, 7> words{s.protocol, s.sender, s.receiver,   s.dataset_size,
                                           s.seed,     s.world,  s.plan_digest};
  std::vector<std::uint8_t> out(domain, domain + sizeof domain);  // with its NUL
  const auto at = out.size();
  out.resize(at + words.size() * sizeof(std::uint64_t));
  for (std::size_t i = 0; i < words.size(); ++i) {
    little_endian::store(out.data() + at + i * sizeof(std::uint64_t), words[i]);
  }
  return out;
}

}  // namespace

std::vector<std::uint8_t> run_secret::prove(const proof_subject& subject) const {
  if (!enabled()) {
    return {};
  }
  const auto message = encoded(subject);
  std::vector<std::uint8_t> out(EVP_MAX_MD_SIZE);
  unsigned int size = 0;
  HMAC(EVP_sha256(), bytes_.data(), static_cast<int>(bytes_.size()), message.data(), message.size(),
       out.data(), &size);
  out.resize(size);
  return out;
}

bool run_secret::verify(const proof_subject& subject,
                        const std::vector<std::uint8_t>& proof) const {
  if (!enabled()) {
    return true;
  }
  const auto expected_proof = prove(subject);
  return proof.size() == expected_proof.size() &&
         CRYPTO_memcmp(proof.data(), expected_proof.data(), proof.size()) == 0;
}

expected<run_secret> read_secret_file(const std::filesystem::path& path) {
  const auto name = path.string();
  auto failed = [&name](errc code, const std::string& why) {
    return error{code, name + ": " + why};
  };
  // Opened first and checked through the descriptor: what is checked is what is read.
  unique_fd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) {
    return failed(errno == ENOENT ? errc::not_found : errc::io_error, std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return failed(errc::invalid_config, "not a regular file");
  }
  if ((st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH)) != 0) {
    return failed(errc::permission_denied,
                  "its group or others may read or write it (chmod 600 " + name + ")");
  }
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < bytes.size()) {
    auto n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return failed(errc::io_error, n < 0 ? std::strerror(errno) : "shorter than its size");
    }
    got += static_cast<std::size_t>(n);
  }
  while (!bytes.empty() && (bytes.back() == '\n' || bytes.back() == '\r')) {
    bytes.pop_back();
  }
  if (bytes.empty()) {
    return failed(errc::invalid_config, "empty (write a secret into it: openssl rand -hex 32)");
  }
  return run_secret(std::move(bytes));
}

}  // namespace conveyor
