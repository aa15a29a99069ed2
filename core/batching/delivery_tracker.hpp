#pragma once
/// What the trainers of a run received, kept as a resume state (resume_state.hpp). Every batch
/// handed to a trainer is recorded: its epoch, its sample ids, and whether it ends the epoch for
/// its GPU. state() then says, for each epoch not yet ended by every GPU, which positions of the
/// epoch's order were delivered. Only what was recorded counts: a batch prepared but not handed
/// out is delivered again after a resume.
///
/// Recording is cheap (a bit per sample id, on the trainers' next()); the epoch's order, to
/// turn ids into positions, is computed only when a state is taken (and kept for the epoch).
///
/// An epoch counts as done once every GPU received its end of that epoch (last_in_epoch), not
/// once every sample was delivered: quarantined samples never are. A sample quarantined in an
/// epoch that had not ended is tried again after a resume.

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "core/batching/resume_state.hpp"

namespace conveyor {

/// Thread-safe (one thread per GPU records; any thread takes the state).
class delivery_tracker {
 public:
  /// Tracks a run of `gpus` GPUs (or ranks) from `start`: a resume state, whose deliveries
  /// count as made, or a fresh one (first_epoch 0, nothing begun) naming the run. `keep_ended`:
  /// epochs still recorded after every GPU ended them. One rank of several keeps the last one
  /// it ended (1): its state is merged with the other ranks' (merge_states), which may still be
  /// in that epoch.
  delivery_tracker(resume_state start, int gpus, std::uint64_t keep_ended = 0);

  /// GPU `gpu` received a batch of epoch `epoch` holding `sample_ids` (ids past the dataset
  /// are ignored); `last_in_epoch`: it was that GPU's last batch of the epoch.
  void record(int gpu, std::uint64_t epoch, const std::vector<std::uint64_t>& sample_ids,
              bool last_in_epoch);
  /// Everything recorded so far (and everything `start` had).
  resume_state state() const;

 private:
  struct epoch_record {
    std::vector<std::uint64_t> ids;  ///< bit i: sample id i was delivered
  };
  epoch_record& epoch_at(std::uint64_t epoch);
  const std::vector<std::uint64_t>& order_of(std::uint64_t epoch) const;
  delivered_set positions_of(std::uint64_t epoch) const;
  std::uint64_t first_epoch_locked() const;
  void forget_ended();

  mutable std::mutex mutex_;
  resume_state run_;  ///< the run's identity (its begun epochs are moved into epochs_)
  std::uint64_t keep_ended_;
  std::map<std::uint64_t, epoch_record> epochs_;  ///< begun and not ended by every GPU
  mutable std::map<std::uint64_t, std::vector<std::uint64_t>> orders_;  ///< of epochs_, as used
  std::vector<std::uint64_t> ended_;  ///< per GPU: epochs it has ended
};

}  // namespace conveyor
