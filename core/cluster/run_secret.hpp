#pragma once
/// The secret the nodes of one run share (cluster.secret_file), with which a node proves its
/// rank to a peer: a hello carries HMAC-SHA256 over what it claims (the protocol, the sender's
/// and the receiver's rank, the run and the cache plan), and the answer carries the receiver's
/// proof likewise, so both sides prove their rank. Challenge-free: a proof is bound to one
/// sender, one receiver and one run, not to one connection (a hello recorded on a plain TCP
/// link could be replayed to the same receiver in the same run; TLS keeps it from being
/// recorded). CAF 0.17's TLS manager checks a certificate against the authority but exposes no
/// name from it (libcaf_openssl/src/openssl/session.cpp sets no verify callback and keeps the
/// SSL object private), so a certificate alone cannot tell ranks apart.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "conveyor/error.hpp"

namespace conveyor {

/// What a proof covers: who says hello to whom, about which run.
struct proof_subject {
  std::uint64_t protocol = 0;
  std::uint64_t sender = 0;    ///< the rank of the node that proves
  std::uint64_t receiver = 0;  ///< the rank of the node it proves it to
  std::uint64_t dataset_size = 0;
  std::uint64_t seed = 0;
  std::uint64_t world = 0;
  std::uint64_t plan_digest = 0;
};

/// Immutable: every method may be called concurrently.
class run_secret {
 public:
  /// No secret: ranks are taken on their word (every proof is empty and every proof passes).
  run_secret() = default;
  /// Precondition: `bytes` is not empty.
  explicit run_secret(std::string bytes);

  bool enabled() const noexcept { return !bytes_.empty(); }
  /// HMAC-SHA256 of `subject` under the secret (32 bytes); empty without a secret.
  std::vector<std::uint8_t> prove(const proof_subject& subject) const;
  /// `proof` is prove(subject) (compared in constant time); always true without a secret.
  bool verify(const proof_subject& subject, const std::vector<std::uint8_t>& proof) const;

 private:
  std::vector<std::uint8_t> bytes_;
};

/// The secret in the file at `path`, without its trailing line breaks. The file must be a
/// regular file of this user's that neither its group nor others may read or write, and not
/// empty; an error (read_private_file's, core/base/private_file.hpp) names the file and says
/// why.
expected<run_secret> read_secret_file(const std::filesystem::path& path);

}  // namespace conveyor
