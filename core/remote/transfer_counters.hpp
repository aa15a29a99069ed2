#pragma once
/// What a node's traffic with an object store came to: requests, bytes, and the retries by
/// reason (what the run's JSON line reports as s3_*). Per epoch where a request served an
/// epoch's samples (the reads ahead of an epoch, and the readers' own); the others (the
/// manifest, listings and shard indexes read at start) are the requests less the epochs'.
/// Thread-safe (atomics and one mutex for the epochs).

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "core/remote/s3_request.hpp"

namespace conveyor {

class transfer_counters {
 public:
  /// One epoch's requests: how many, their bytes, and when the first began and the last ended
  /// (seconds since the counters were made): the epoch's fetch time is their span.
  struct epoch_figures {
    std::uint64_t requests = 0;
    std::uint64_t bytes = 0;
    double first_start_s = 0;
    double last_end_s = 0;
  };
  struct totals {
    std::uint64_t requests = 0;  ///< answered or not, retries included
    std::uint64_t retries = 0;
    std::array<std::uint64_t, 9> by_failure{};  ///< attempts that failed, by s3_failure
    std::uint64_t bytes_in = 0;
    std::uint64_t bytes_out = 0;
  };

  transfer_counters();

  /// An attempt was made (and failed with `f`, unless none).
  void attempt(s3_failure f, std::uint64_t bytes_in, std::uint64_t bytes_out) noexcept;
  void retry() noexcept { retries_.fetch_add(1, std::memory_order_relaxed); }
  /// A request (its attempts) that served epoch `epoch`, begun and ended at those times; nullopt:
  /// one that served no epoch (not counted here).
  void served(std::optional<std::uint64_t> epoch, std::uint64_t bytes,
              std::chrono::steady_clock::time_point began,
              std::chrono::steady_clock::time_point ended);

  totals snapshot() const;
  std::vector<epoch_figures> by_epoch() const;

 private:
  std::chrono::steady_clock::time_point born_;
  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> retries_{0};
  std::array<std::atomic<std::uint64_t>, 9> by_failure_{};
  std::atomic<std::uint64_t> bytes_in_{0};
  std::atomic<std::uint64_t> bytes_out_{0};
  mutable std::mutex mutex_;
  std::vector<epoch_figures> epochs_;
};

}  // namespace conveyor
