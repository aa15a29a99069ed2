#pragma once
/// The samples in flight between dispatch and result, one record per live attempt: which
/// reader and preprocessor it went to, which straggler actor finishes it, and how often the
/// sample has failed so far. When a worker dies, the attempts it held are taken out and
/// re-issued; a result whose attempt has no record any more is stale and is ignored.

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/base/worker_role.hpp"
#include "core/batching/prepared_sample.hpp"

namespace conveyor {

struct flight {
  sample_ticket ticket;
  int reader = 0;
  int worker = 0;           ///< the preprocessor
  int straggler = -1;       ///< >= 0: handed to this straggler actor
  bool handed_off = false;  ///< left its preprocessor (maybe still waiting for a straggler)
  std::uint32_t failures = 0;
};

/// Single-threaded (owned by the batcher).
class flight_table {
 public:
  void start(flight f) { flights_[f.ticket.attempt] = f; }
  /// The live record of `attempt`, or null when the attempt is stale.
  flight* find(std::uint64_t attempt);
  /// Removes and returns the record of `attempt`; nullopt when stale.
  std::optional<flight> finish(std::uint64_t attempt);
  /// Removes and returns every attempt from `first_attempt` on that `role` number `index`
  /// holds, oldest first.
  std::vector<flight> take_held_by(worker_role role, int index, std::uint64_t first_attempt = 0);
  std::size_t size() const noexcept { return flights_.size(); }

 private:
  std::unordered_map<std::uint64_t, flight> flights_;
};

}  // namespace conveyor
