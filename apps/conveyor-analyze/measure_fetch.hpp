#pragma once
/// conveyor-analyze's fetch measure: samples read from storage in the order an epoch reads
/// them (epoch 0 of the run's seed, this node's share), on the node's number of reader
/// threads; first cold (the dataset's pages dropped from the page cache: posix_fadvise
/// POSIX_FADV_DONTNEED on each of its files), then warm (the same reads again, from memory).

#include <cstdint>
#include <string>
#include <vector>

#include "apps/conveyor-analyze/measure_prep.hpp"
#include "core/storage/sample_source.hpp"

namespace conveyor {

struct fetch_measurement {
  std::uint64_t samples = 0;
  std::uint64_t bytes = 0;
  std::uint64_t failed = 0;  ///< reads that failed (corrupt records, missing files)
  double cold_s = 0;
  double warm_s = 0;
  std::uint64_t files_dropped = 0;  ///< files whose pages were dropped before the cold pass
  std::uint64_t files = 0;

  double cold_rate() const { return static_cast<double>(samples) / cold_s; }
  double warm_rate() const { return static_cast<double>(samples) / warm_s; }
  double cold_mb_s() const { return static_cast<double>(bytes) / 1e6 / cold_s; }
  double warm_mb_s() const { return static_cast<double>(bytes) / 1e6 / warm_s; }
};

/// Drops the pages of `files` from the page cache (those of other processes' mappings and
/// dirty ones stay: the kernel decides); how many it could open.
std::uint64_t drop_from_page_cache(const std::vector<std::filesystem::path>& files);

/// Reads the samples `ids` (in that order) on `readers` threads, cold then warm.
fetch_measurement measure_fetch(const sample_source& source, const std::vector<std::uint64_t>& ids,
                                int readers, const progress_fn& progress = {});

}  // namespace conveyor
