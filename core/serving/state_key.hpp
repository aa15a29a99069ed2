#pragma once
/// The key a serving node signs its clients' resume states with (serve.state_key_file), so that
/// a node resumes only from states a node holding the same key vouched for: a client cannot
/// forge one that claims samples it never received. 32 random bytes in a file that only the
/// node's user may read, made on first use.
///
/// What it does not protect: a state replayed from an earlier run of the same topology and key
/// (the run is named by dataset size, seed, shuffle and epochs, not by a run id), and anyone
/// who can read the key file (the node's user, root).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/batching/resume_state.hpp"

namespace conveyor {

/// Immutable once made; thread-safe.
class state_key {
 public:
  /// The key in the file at `path`, or a new one written there (mode 0600, never over an
  /// existing file) when none is. Errors as read_private_file's (core/base/private_file.hpp):
  /// a file others may read or write, another user's, not a regular file, or of fewer than 32
  /// or more than 4096 bytes is refused naming it.
  static expected<state_key> load_or_make(const std::string& path);

  /// This key's signature of `state` (a blob of encode()) as rank `rank` of job `job`'s.
  state_signature sign(const std::vector<std::uint8_t>& state, std::uint32_t job,
                       std::uint32_t rank) const;
  /// Whether `blob` is signed with this key, as rank `rank` of job `job`'s.
  bool verify(const signed_blob& blob, std::uint32_t job, std::uint32_t rank) const;

 private:
  explicit state_key(std::vector<std::uint8_t> secret) : secret_(std::move(secret)) {}
  std::array<std::uint8_t, 32> mac(const std::vector<std::uint8_t>& state, std::uint32_t job,
                                   std::uint32_t rank) const;

  std::vector<std::uint8_t> secret_;
};

}  // namespace conveyor
