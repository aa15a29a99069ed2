#pragma once
/// A generator of KiTS19-like 3D segmentation cases, as the MLPerf UNet3D reference's
/// preprocessing leaves them (docs/unet3d-reference.md): case_XXXXX_x.npy (float32,
/// 1 x D x H x W: CT intensities clipped to [-79, 304] HU and normalised as (x - 101) / 76.9)
/// and case_XXXXX_y.npy (uint8, the same shape: 0 background, 1 kidney, 2 tumour). Shapes vary
/// widely per case on every axis, heavy-tailed in depth as KiTS19's do after resampling to
/// 1.6 x 1.2 x 1.2 mm; a body of soft tissue in air with smooth variation and noise; one or
/// two bean-shaped kidneys, each with a tumour inside. For `conveyor-pack --synthetic-volumes`,
/// tests and bench/unet3d.sh.

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>

#include "conveyor/error.hpp"
#include "core/base/host_array.hpp"

namespace conveyor {

struct synthetic_volume_options {
  std::uint64_t count = 60;
  std::uint64_t seed = 1;
  /// Every axis is at least this (the reference pads to its 128 patch). >= 16.
  int min_extent = 128;
  /// Height and width lie in [min_extent, max_side]; >= min_extent.
  int max_side = 400;
  /// Depth: min_extent x a Pareto draw (alpha 2.2: median ~1.37x, p90 ~2.8x), at most this.
  int max_depth = 640;
  /// Cases generated at once; 0 = one per core. The files do not depend on it.
  unsigned threads = 0;
};

struct synthetic_volume_summary {
  std::uint64_t cases = 0;
  std::uint64_t bytes = 0;   ///< total size of the files written
  std::uint64_t voxels = 0;  ///< all cases' voxels
};

/// Case `index`'s extents {D, H, W}: a function of the options' seed and extents only.
std::array<std::int64_t, 3> synthetic_volume_shape(const synthetic_volume_options& options,
                                                   std::uint64_t index);

/// Case `index`'s image (float32 [1, D, H, W]) and label (uint8, the same shape), in memory.
/// Deterministic: a function of the options (but threads) and the index.
std::array<host_array, 2> make_synthetic_case(const synthetic_volume_options& options,
                                              std::uint64_t index);

/// `progress(done, total)`: cases written so far.
using synthetic_volume_progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

/// Writes `options.count` cases into `dir` as case_XXXXX_x.npy and case_XXXXX_y.npy (XXXXX the
/// zero-padded index). `dir` is created if needed and must be empty (errc::invalid_argument
/// otherwise); errc::invalid_argument for options out of range; errors name the file
/// concerned. `progress` is called on the calling thread, never concurrently.
expected<synthetic_volume_summary> generate_synthetic_volumes(
    const std::filesystem::path& dir, const synthetic_volume_options& options,
    const synthetic_volume_progress& progress = {});

}  // namespace conveyor
