#pragma once
/// The time each trainer process of a served node waited for its batches (its stall), per
/// (job, rank): what its client measured in next() (serve::release::waited_ns) and told the
/// node with its releases. The clients of one (job, rank) add up: one that comes back after a
/// crash adds to what the ones before it waited. Thread-safe: the node's feed server adds,
/// /metrics and the live page read.

#include <cstdint>
#include <mutex>
#include <vector>

namespace conveyor {

class client_waits {
 public:
  struct entry {
    int job = 0;
    int rank = 0;
    double seconds = 0;  ///< the waits of its clients so far
  };

  /// Every (job, rank) of `jobs` jobs of `ranks` ranks, at 0. Precondition: both >= 1.
  client_waits(int jobs, int ranks);

  /// The client of (job, rank) waited `ns` more. Precondition: in range, ns >= 0 (the feed
  /// server checks what a client says before it adds it).
  void add(int job, int rank, std::int64_t ns);
  /// Every (job, rank), job by job, rank by rank.
  std::vector<entry> snapshot() const;

 private:
  const int ranks_;
  mutable std::mutex mutex_;
  std::vector<std::int64_t> waited_ns_;  ///< [job * ranks + rank]; guarded by mutex_
};

}  // namespace conveyor
