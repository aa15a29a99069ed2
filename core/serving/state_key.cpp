#include "core/serving/state_key.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/base/hmac.hpp"
#include "core/base/little_endian.hpp"
#include "core/base/private_file.hpp"

namespace conveyor {
namespace {

constexpr std::size_t new_key_bytes = 32;
constexpr std::size_t max_key_bytes = 4096;
constexpr char domain[] = "conveyor resume state v1";

error about_key(const error& e) {
  return {e.code(), "serve.state_key_file: " + e.message()};
}

// A fresh random key, written to `path`, which must not exist yet.
expected<std::vector<std::uint8_t>> make_key(const std::string& path) {
  std::vector<std::uint8_t> secret(new_key_bytes);
  if (::getrandom(secret.data(), secret.size(), 0) != static_cast<ssize_t>(secret.size())) {
    return error{errc::io_error, path + ": getrandom: " + std::strerror(errno)};
  }
  if (auto made = create_private_file(path, secret); !made) {
    return std::move(made).error();
  }
  return secret;
}

}  // namespace

expected<state_key> state_key::load_or_make(const std::string& path) {
  auto secret = read_private_file(path, new_key_bytes, max_key_bytes);
  if (!secret && secret.error().code() == errc::not_found) {
    secret = make_key(path);
  }
  if (!secret) {
    return about_key(secret.error());
  }
  return state_key(std::move(*secret));
}

std::array<std::uint8_t, 32> state_key::mac(const std::vector<std::uint8_t>& state,
                                            std::uint32_t job, std::uint32_t rank) const {
  std::vector<std::uint8_t> message(sizeof domain + 8 + state.size());
  std::memcpy(message.data(), domain, sizeof domain);
  little_endian::store(message.data() + sizeof domain, job);
  little_endian::store(message.data() + sizeof domain + 4, rank);
  std::copy(state.begin(), state.end(), message.begin() + sizeof domain + 8);
  return hmac_sha256(secret_, message);
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
  return same_digest(expected_mac.data(), blob.signature->mac.data(), expected_mac.size());
}

}  // namespace conveyor
