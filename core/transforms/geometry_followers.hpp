#pragma once
/// The fields that move with a geometric step's image (a spec's `fields` after the first):
/// boxes (float32 [n, 4]: x0, y0, x1, y1 in the image's pixels, as COCO's boxes in xyxy form)
/// are mapped through the same crop, resize and flip as the image, and clipped to it; masks
/// (images: a segmentation map) are cut, resized with nearest neighbour and flipped with it.
/// Both from the step's one draw, so image and followers always agree. Bound to field indices
/// when the chain is built; immutable, thread-safe.

#include <cstddef>
#include <string_view>
#include <vector>

#include "conveyor/error.hpp"
#include "core/transforms/chain_fields.hpp"
#include "core/transforms/crop_geometry.hpp"
#include "core/transforms/sample_state.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor {

/// The index of the image field `name` a step works on; errc::invalid_config naming
/// the field when no step before made it, or it holds no image (an array).
expected<std::size_t> bind_image(const std::string& name, const chain_fields& fields);

/// Field `index` (an image) is `height` x `width` from now on (`varies` for either: it depends
/// on the sample); its channels stay.
void set_image_size(chain_fields& fields, std::size_t index, std::int64_t height,
                    std::int64_t width);

class geometry_followers {
 public:
  geometry_followers() = default;
  /// Binds names[1..] of a step: each must be a field made before, a float32 [?, 4] array
  /// (boxes) or an image (a mask); errc::invalid_config naming the field otherwise. The first
  /// name is the step's image and is not bound here.
  static expected<geometry_followers> bind(const geometry_fields& names,
                                           const chain_fields& fields);

  bool empty() const noexcept { return boxes_.empty() && masks_.empty(); }

  /// The image, `width` pixels wide, was flipped left to right.
  void flip(sample_state& s, int width) const;
  /// The image's `box`, in the coordinates of a `source`-sized image, was cut and resized to
  /// `out`: boxes are mapped and clipped to the output; masks (of `source` size) are cut the
  /// same way (zero where the box leaves them) and resized with nearest neighbour.
  /// errc::transform_error naming the sample and the field for a mask of another size.
  expected<void> crop_resize(sample_state& s, std::string_view op, const crop_box& box,
                             image_extent source, image_extent out) const;

 private:
  std::vector<std::size_t> boxes_;
  std::vector<std::size_t> masks_;
};

/// A geometric step's image and the fields that follow it.
struct bound_geometry {
  std::size_t image = 0;
  geometry_followers followers;
};

/// Binds a geometric step's `names` (spec.fields): the first its image (bind_image), the rest
/// its followers (geometry_followers::bind).
expected<bound_geometry> bind_geometry(const geometry_fields& names, const chain_fields& fields);

}  // namespace conveyor
