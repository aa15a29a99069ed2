#pragma once
/// Signs the resume states of a serving node's clients (serve.state_key_file), vouching only for
/// what the node sent: for each (job, rank) it keeps, as a client of it would, the state of every
/// batch published for that rank (and of the state that (job, rank) resumed from), and signs a
/// client's state only when the state claims nothing more (claims_within). So a client cannot
/// have a state signed that skips samples it never received, and a forged state is refused when
/// the node resumes (resume_gate.hpp).

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "apps/conveyor-node/resume_gate.hpp"
#include "conveyor/error.hpp"
#include "core/batching/delivery_tracker.hpp"
#include "core/serving/state_key.hpp"

namespace conveyor {

/// Thread-safe: the pullers record, the poll loop signs.
class state_notary {
 public:
  state_notary(const run_identity& run, int jobs, int ranks, const state_key& key);

  /// Rank `rank` of job `job` resumed from `state` (signed and checked): counted as sent.
  void vouch_for(std::uint32_t job, std::uint32_t rank, const resume_state& state);
  /// A batch of rank `rank` (epoch, sample ids, whether it ends the epoch) was published:
  /// counted as sent to that rank's client of every job.
  void published(int rank, std::uint64_t epoch, const std::vector<std::uint64_t>& sample_ids,
                 bool last_in_epoch);
  /// The signature of `blob`, a state a client of (job, rank) took, as that (job, rank)'s.
  /// errc::invalid_argument when it is not a state of this run, errc::permission_denied when
  /// it claims samples this node did not send that rank.
  expected<state_signature> sign(std::uint32_t job, std::uint32_t rank,
                                 const std::vector<std::uint8_t>& blob) const;

 private:
  delivery_tracker& tracker(std::uint32_t job, std::uint32_t rank) const;

  const run_identity run_;
  const std::uint32_t jobs_;
  const state_key& key_;
  mutable std::mutex mutex_;  ///< guards the pointers of trackers_ (each tracker is thread-safe)
  std::vector<std::unique_ptr<delivery_tracker>> trackers_;  ///< [rank * jobs + job]
};

}  // namespace conveyor
