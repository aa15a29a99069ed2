#pragma once
/// A resume state: what a run must know to deliver exactly the rest of its samples after a
/// stop (preemption, crash, restart), as a small, versioned, checksummed blob. It names the run
/// it belongs to (dataset size, seed, order, epochs), the first epoch not complete, and, for
/// each epoch begun from there, the positions of the epoch's order delivered (delivered_set).
/// Sample order and per-sample randomness are functions of (seed, epoch, id) alone
/// (epoch_order.hpp, core/base/sample_seed.hpp), so nothing else is needed to go on exactly.
///
/// The blob: "CVYRESUM", the format version (u32), the payload's length (u64), the payload
/// (little-endian u64 fields and bitmap words), and the XXH3-64 of everything before it.
/// Version 2 names the order by its mode (a byte), block and span (u64 each); version 1 (a
/// shuffle byte: global or none) is still read. A
/// served rank's state may be followed by a signature (state_signature: the node that served it
/// vouches for it, core/serving/state_key.hpp); decode() reads a signed blob as the state it
/// signs.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/batching/delivered_set.hpp"
#include "core/batching/epoch_order.hpp"

namespace conveyor {

struct resume_state {
  static constexpr std::uint32_t format_version = 2;

  std::uint64_t dataset_size = 0;
  std::uint64_t seed = 0;
  sample_order order{};
  std::uint64_t epochs = 0;
  std::uint64_t first_epoch = 0;  ///< epochs before it are complete
  /// Epochs first_epoch, first_epoch + 1, ... that have begun: their delivered positions
  /// (each of dataset_size positions).
  std::vector<delivered_set> begun;

  /// Whether sample position `position` of epoch `epoch` was delivered.
  bool delivered(std::uint64_t epoch, std::uint64_t position) const noexcept;
  /// Samples delivered over every epoch (those before first_epoch all).
  std::uint64_t delivered_count() const noexcept;
};

/// The blob of `state`.
std::vector<std::uint8_t> encode(const resume_state& state);

/// The largest blob a sound state of a run of `dataset_size` samples can be: every begun epoch
/// a full bitmap (a rank's state keeps at most the epoch it is in and the one it ended last;
/// three are allowed). A node reads no more than this of a client's state.
std::uint64_t max_encoded_size(std::uint64_t dataset_size) noexcept;

/// A node's signature of a served rank's state: "CVYRSIGN", job (u32), rank (u32), and the
/// HMAC-SHA256 the node computed (state_key.hpp), after the state's blob.
struct state_signature {
  static constexpr std::size_t bytes = 8 + 4 + 4 + 32;
  std::uint32_t job = 0;
  std::uint32_t rank = 0;
  std::array<std::uint8_t, 32> mac{};
};

/// A blob split into the state's own bytes and the signature that follows them, if one does.
struct signed_blob {
  std::vector<std::uint8_t> state;
  std::optional<state_signature> signature;
};
signed_blob split_signature(const std::vector<std::uint8_t>& blob);
/// `state` (a blob of encode()) with `signature` after it.
std::vector<std::uint8_t> append_signature(std::vector<std::uint8_t> state,
                                           const state_signature& signature);

/// The state in `blob`: errc::corrupt_shard naming what is wrong for bytes that are not a
/// resume state, are truncated, or are of another format version; errc::checksum_mismatch for
/// damaged ones; errc::invalid_argument for a state that contradicts itself (positions past
/// the dataset, more begun epochs than the run has). `source` names the blob in messages (a
/// file, "the state given to open()").
expected<resume_state> decode(const std::vector<std::uint8_t>& blob, const std::string& source);

/// decode(), then check_same_run(): the state in `blob` if it is a sound state of that run.
expected<resume_state> decode_for_run(const std::vector<std::uint8_t>& blob,
                                      const std::string& source, std::uint64_t dataset_size,
                                      std::uint64_t seed, const sample_order& order,
                                      std::uint64_t epochs);

/// The union of the states of a run's ranks (each rank's own: what its trainer received), as
/// the state to resume the whole run from: epochs before the earliest first_epoch are complete;
/// from there, a position is delivered when a rank that still records the epoch had it. A rank
/// that no longer records an epoch another rank is still in adds nothing to it (its samples
/// there come again, rather than risk losing any): ranks of one data-parallel job step
/// together, and each keeps the last epoch it ended (delivery_tracker's keep_ended), so that
/// happens only to ranks more than an epoch apart. errc::invalid_argument for no states, or
/// states of different runs (naming `source` and the index). The work is proportional to the
/// words the states store (delivered_set::unite), never to a size one claims.
expected<resume_state> merge_states(const std::vector<resume_state>& states,
                                    const std::string& source);

/// Whether `state` claims nothing `known` does not have (both of one run): every epoch it
/// counts as complete is complete in `known`, and every position it delivered in an epoch
/// begun is delivered there in `known`. Word by word, as merge_states.
bool claims_within(const resume_state& state, const resume_state& known);

/// errc::invalid_config naming the first field that differs when `state` belongs to another run
/// than one of `dataset_size` samples seeded `seed` in `order` over `epochs` epochs.
expected<void> check_same_run(const resume_state& state, std::uint64_t dataset_size,
                              std::uint64_t seed, const sample_order& order, std::uint64_t epochs);

}  // namespace conveyor
