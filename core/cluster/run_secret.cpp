#include "core/cluster/run_secret.hpp"

#include <array>

#include "core/base/hmac.hpp"
#include "core/base/little_endian.hpp"
#include "core/base/private_file.hpp"

namespace conveyor {
namespace {

// Keeps a proof of this protocol from being taken for anything else made with the secret.
constexpr char domain[] = "conveyor peer hello";
constexpr std::size_t max_secret_bytes = 64 << 10;

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

run_secret::run_secret(std::string bytes) : bytes_(bytes.begin(), bytes.end()) {}

std::vector<std::uint8_t> run_secret::prove(const proof_subject& subject) const {
  if (!enabled()) {
    return {};
  }
  const auto digest = hmac_sha256(bytes_, encoded(subject));
  return {digest.begin(), digest.end()};
}

bool run_secret::verify(const proof_subject& subject,
                        const std::vector<std::uint8_t>& proof) const {
  if (!enabled()) {
    return true;
  }
  const auto expected_proof = prove(subject);
  return proof.size() == expected_proof.size() &&
         same_digest(proof.data(), expected_proof.data(), proof.size());
}

expected<run_secret> read_secret_file(const std::filesystem::path& path) {
  auto bytes = read_private_file(path.string(), 0, max_secret_bytes);
  if (!bytes) {
    return std::move(bytes).error();
  }
  while (!bytes->empty() && (bytes->back() == '\n' || bytes->back() == '\r')) {
    bytes->pop_back();
  }
  if (bytes->empty()) {
    return error{errc::invalid_config,
                 path.string() + ": empty (write a secret into it: openssl rand -hex 32)"};
  }
  return run_secret(std::string(bytes->begin(), bytes->end()));
}

}  // namespace conveyor
