#pragma once
/// A generator of sample image datasets: real JPEG files in ImageFolder layout whose sizes,
/// file sizes and decode costs resemble photos, with a heavy tail of large images (the slow
/// samples the pipeline must handle well). Used by `conveyor-pack --synthetic`, tests and
/// benchmarks.

#include <cstdint>
#include <filesystem>
#include <functional>

#include "conveyor/error.hpp"

namespace conveyor {

struct synthetic_options {
  std::uint64_t count = 1000;
  /// Share of large images (each side 1800-3200 px); the others have each side 300-640 px.
  /// Exactly round(count * large_fraction) images are large, spread by the seed. In [0, 1].
  double large_fraction = 0.10;
  /// Image i belongs to class i % classes. At least 1.
  int classes = 10;
  std::uint64_t seed = 1;
  /// JPEG quality, 1-100.
  int quality = 90;
  /// Worker threads; 0 = one per core. The files do not depend on it.
  unsigned threads = 0;
};

struct synthetic_summary {
  std::uint64_t files = 0;
  std::uint64_t bytes = 0;  ///< total size of the files written
  std::uint64_t large = 0;  ///< how many of them are large
};

/// `progress(done, total)`: files written so far.
using synthetic_progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

/// Writes `options.count` JPEG files as dir/class_XX/img_NNNNNN.jpg (XX = the class, NNNNNN =
/// the image's index, both zero-padded so that name order is index order). The bytes of every
/// file depend only on the seed, the index and the other options, never on the thread count.
/// `dir` is created if needed and must be empty: the generator never mixes its files with
/// others (errc::invalid_argument otherwise). Errors name the file concerned.
/// Runs on all cores; `progress` is called on the calling thread, never concurrently.
expected<synthetic_summary> generate_synthetic_images(const std::filesystem::path& dir,
                                                      const synthetic_options& options,
                                                      const synthetic_progress& progress = {});

}  // namespace conveyor
