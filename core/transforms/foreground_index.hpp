#pragma once
/// The per-case index the balanced crop of the MLPerf UNet3D recipe draws its foreground
/// window from, built once per case from one pass over its label volume (one x-slab in memory
/// at a time) instead of the reference's scipy.ndimage.label and find_objects over the whole
/// volume on every foreground draw (docs/unet3d-reference.md section 3b):
///   - the classes present (the distinct label values > 0, sorted);
///   - per class, its connected objects (6-connectivity, scipy's default structure), each as
///     its bounding box; the two largest by box volume kept, as the reference's stable argsort
///     keeps them: [second largest, largest] (or just the one), ties to the later object in
///     raster order of its first voxel.
/// The same pass checks the label's values; the image is checked for NaN and infinity once.

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "conveyor/error.hpp"
#include "core/transforms/volume_part.hpp"

namespace conveyor {

struct case_index {
  struct class_objects {
    std::uint8_t value = 0;
    std::vector<volume_box> kept;  ///< [second largest, largest], or the only one
  };
  std::vector<class_objects> classes;  ///< by value, ascending; those present only
};

/// Separate foreground pieces a label may have while it is indexed (each costs ~50 bytes): a
/// hostile or corrupt label (a checkerboard of classes) is refused at the voxel that would make
/// one more, instead of growing the index to gigabytes. A CT segmentation has a handful of
/// objects.
inline constexpr std::size_t max_label_pieces = 1'000'000;

/// The index of `label` (uint8 [1, X, Y, Z]). errc::decode_error naming the part and the
/// voxel for a value above `max_class`, naming the part for a label of more than one channel
/// or more than max_label_pieces separate pieces; the byte source's errors. Thread-safe (its
/// own state only).
expected<case_index> build_case_index(const volume_part& label, int max_class);

/// errc::decode_error naming the part and the first element (channel, x, y, z) that is NaN or
/// infinite in `image` (float32). One pass over the volume, one slab in memory at a time.
expected<void> check_finite(const volume_part& image);

/// Each case's index (or why it has none), made once and kept for the run: a case's first
/// read pays for its pass over the volume, every later one only for its crop. Keyed by sample
/// id, checked against the key. Thread-safe; two threads that make the same case's index at
/// once both make it (the first stored is kept).
class case_index_memo {
 public:
  using entry = std::shared_ptr<const expected<case_index>>;
  /// The entry of sample `id` with key `key`, or null when none is kept.
  entry find(std::uint64_t id, const std::string& key) const;
  /// Keeps `made` for sample `id` and returns what is kept for it.
  entry keep(std::uint64_t id, const std::string& key, expected<case_index> made);

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::pair<std::string, entry>> entries_;
};

}  // namespace conveyor
