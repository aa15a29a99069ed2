#pragma once
/// HMAC-SHA256 (OpenSSL's libcrypto), for what a node signs with a secret of its own: a served
/// rank's resume state, a cluster node's proof of rank. Thread-safe.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace conveyor {

using sha256_digest = std::array<std::uint8_t, 32>;

/// HMAC-SHA256 of `message` under `key`.
sha256_digest hmac_sha256(const std::vector<std::uint8_t>& key,
                          const std::vector<std::uint8_t>& message);

/// `a` equals `b`, compared in constant time (a forger learns nothing from how long it took).
bool same_digest(const std::uint8_t* a, const std::uint8_t* b, std::size_t size) noexcept;

}  // namespace conveyor
