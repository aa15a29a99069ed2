#include "core/transforms/balanced_crop.hpp"

#include <algorithm>
#include <string>

namespace conveyor {
namespace {

constexpr std::array<std::string_view, 3> corner_sites{"crop.corner0", "crop.corner1",
                                                       "crop.corner2"};
constexpr std::array<std::string_view, 3> adjust_sites{"crop.adjust0", "crop.adjust1",
                                                       "crop.adjust2"};

// The reference's randrange(max_range): 0 without a draw when max_range is 0.
std::int64_t draw_below(step_draws& draws, std::string_view site, std::int64_t n) {
  return n == 0 ? 0 : draws.randrange(site, n);
}

volume_box random_window(const std::array<std::int64_t, 3>& extents,
                         const balanced_crop_params& params, step_draws& draws) {
  volume_box box;
  for (std::size_t a = 0; a < 3; ++a) {
    auto corner = draw_below(draws, corner_sites[a], extents[a] - params.patch[a]);
    box[a] = {corner, corner + params.patch[a]};
  }
  return box;
}

volume_box foreground_window(const std::array<std::int64_t, 3>& extents, const case_index& index,
                             const balanced_crop_params& params, step_draws& draws) {
  const auto cls =
      draws.choice_index("crop.class", static_cast<std::int64_t>(index.classes.size()));
  const auto& kept = index.classes[static_cast<std::size_t>(cls)].kept;
  const auto which = draws.randrange("crop.object", static_cast<std::int64_t>(kept.size()));
  const auto& object = kept[static_cast<std::size_t>(which)];
  volume_box box;
  for (std::size_t a = 0; a < 3; ++a) {
    box[a] = adjust_axis(object[a], extents[a], params.patch[a], draws, adjust_sites[a]);
  }
  return box;
}

}  // namespace

axis_range adjust_axis(axis_range object, std::int64_t size, std::int64_t patch, step_draws& draws,
                       std::string_view site) {
  auto diff = patch - object.extent();
  const std::int64_t sign = diff < 0 ? -1 : 1;
  diff = diff < 0 ? -diff : diff;
  const auto ladj = draw_below(draws, site, diff);
  const auto hadj = diff - ladj;
  axis_range out{std::max<std::int64_t>(0, object.start - sign * ladj),
                 std::min(size, object.stop + sign * hadj)};
  const auto short_by = patch - out.extent();
  if (short_by > 0 && out.start == 0) {
    out.stop += short_by;
  } else if (short_by > 0) {
    out.start -= short_by;
  }
  return out;
}

expected<volume_box> balanced_crop_window(const std::array<std::int64_t, 3>& extents,
                                          const case_index& index,
                                          const balanced_crop_params& params, step_draws& draws) {
  for (std::size_t a = 0; a < 3; ++a) {
    if (extents[a] < params.patch[a]) {
      return error{errc::decode_error, "the volume is " + std::to_string(extents[a]) +
                                           " voxels on axis " + std::to_string(a + 1) +
                                           ", smaller than the patch's " +
                                           std::to_string(params.patch[a])};
    }
  }
  const bool foreground = draws.random("crop.oversample") < params.oversampling;
  if (foreground && !index.classes.empty()) {
    return foreground_window(extents, index, params, draws);
  }
  return random_window(extents, params, draws);
}

}  // namespace conveyor
