#pragma once
/// A .npy volume read in place: its header parsed from the first bytes of its part, and then
/// only the boxes or pieces a step needs read (a 128^3 crop of a volume of up to a GB), never
/// the whole array at once. The part is in the record or left in its file (sample_parts.hpp
/// open_sample_part). For the volume steps of the MLPerf UNet3D recipe.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "conveyor/error.hpp"
#include "core/base/host_array.hpp"
#include "core/codecs/npy_header.hpp"
#include "core/storage/byte_source.hpp"

namespace conveyor {

/// [start, stop) on one axis.
struct axis_range {
  std::int64_t start = 0;
  std::int64_t stop = 0;
  std::int64_t extent() const noexcept { return stop - start; }
  friend bool operator==(const axis_range& a, const axis_range& b) noexcept {
    return a.start == b.start && a.stop == b.stop;
  }
};
/// A box over the three spatial axes (1, 2, 3 of a [C, X, Y, Z] volume).
using volume_box = std::array<axis_range, 3>;

/// Immutable once opened; reads may run concurrently.
struct volume_part {
  std::string name;  ///< the part's name ("x.npy"), for messages
  npy_header header;
  std::shared_ptr<const byte_source> bytes;

  std::int64_t channels() const noexcept { return header.shape[0]; }
  /// The spatial extents {X, Y, Z}.
  std::array<std::int64_t, 3> extents() const noexcept {
    return {header.shape[1], header.shape[2], header.shape[3]};
  }
};

/// Parses the header of `bytes` (a whole .npy file) and checks that it is a volume the steps
/// read in place: rank 4 [C, X, Y, Z], C order, little-endian, of `type`, and not empty (every
/// extent at least 1). errc::decode_error naming the part and what it holds otherwise. Reads
/// only the header: nothing is allocated for the elements.
expected<volume_part> open_volume_part(std::string name, std::shared_ptr<const byte_source> bytes,
                                       dtype type);

/// The elements of `box` (all channels) into `out` (C order, [C, box extents]: C x the box's
/// voxel count x the item size bytes). Precondition: the box lies inside the volume.
/// Errors: the byte source's, naming the part.
expected<void> read_box(const volume_part& volume, const volume_box& box, std::uint8_t* out);

/// Calls `visit(i, slab)` for each slab i of [0, C x X) in order (channel i / X, x i % X), with
/// slab its Y x Z elements (C order); stops at the first error visit returns. For scans that
/// must see the whole volume once (a label's foreground index): one slab in memory at a time.
expected<void> for_each_slab(
    const volume_part& volume,
    const std::function<expected<void>(std::int64_t x, const std::uint8_t* slab)>& visit);

}  // namespace conveyor
