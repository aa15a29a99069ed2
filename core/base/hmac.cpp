#include "core/base/hmac.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace conveyor {

sha256_digest hmac_sha256(const std::vector<std::uint8_t>& key,
                          const std::vector<std::uint8_t>& message) {
  sha256_digest out{};
  unsigned int size = 0;
  ::HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), message.data(), message.size(),
         out.data(), &size);
  return out;
}

bool same_digest(const std::uint8_t* a, const std::uint8_t* b, std::size_t size) noexcept {
  return CRYPTO_memcmp(a, b, size) == 0;
}

}  // namespace conveyor
