#pragma once
/// The window of the MLPerf UNet3D reference's RandBalancedCrop (pytorch_loader.py @ 6b277bbe,
/// lines 17-78; docs/unet3d-reference.md section 3), from a case's foreground index: with
/// probability `oversampling` a window around one of the two largest objects of a random class
/// present, otherwise a uniform random window. Pure arithmetic over the draws, in the
/// reference's order, with its off-by-ones (a random corner lies in [0, S - P - 1], never flush
/// with the far edge).

#include <array>
#include <cstdint>

#include "conveyor/error.hpp"
#include "core/transforms/foreground_index.hpp"
#include "core/transforms/step_draws.hpp"
#include "core/transforms/volume_part.hpp"

namespace conveyor {

struct balanced_crop_params {
  std::array<std::int64_t, 3> patch{128, 128, 128};
  double oversampling = 0.4;
};

/// The reference's `adjust` on one axis: the window of `patch` voxels around the object's
/// [start, stop) in a volume of `size` voxels (size >= patch), with its draw
/// randrange(|patch - (stop - start)|) taken from `draws` at `site` when that is not 0.
axis_range adjust_axis(axis_range object, std::int64_t size, std::int64_t patch, step_draws& draws,
                       std::string_view site);

/// The window of one sample, drawn in the reference's order. A case without foreground takes
/// the random window on a foreground draw (the reference fails there: np.random.choice of no
/// class). errc::decode_error when the volume is smaller than the patch on an axis (the
/// reference's preprocessing pads every axis to it; its crop would fail).
expected<volume_box> balanced_crop_window(const std::array<std::int64_t, 3>& extents,
                                          const case_index& index,
                                          const balanced_crop_params& params, step_draws& draws);

}  // namespace conveyor
