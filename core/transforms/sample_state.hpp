#pragma once
/// The in-flight state of one sample while a transform chain works on it. A chain may stop
/// between any two steps and resume later on another thread or actor: everything it needs to
/// go on is in here, every field included.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "core/base/host_array.hpp"
#include "core/codecs/scale_ratio.hpp"
#include "core/storage/record.hpp"
#include "core/transforms/crop_geometry.hpp"
#include "core/transforms/step_draws.hpp"

namespace conveyor {

/// A crop or resize decided before decoding: the box (the whole image for a resize), in the
/// coordinates of the full-size source image, and the scale the image was then decoded at
/// (its size is scaled_extent(source, scale)); and the part of that decoded image the sample
/// holds: all of it, or only the rows and columns the box needs (a region decode).
struct planned_crop {
  crop_box source_box;
  image_extent source;
  scale_ratio decode_scale;
  crop_box decoded;  ///< in the decoded image's coordinates; the sample's image is its size
};

/// One field of a sample while the chain works on it (core/base/field_schema.hpp): an image,
/// height x width x channels as OpenCV holds it, between a decode and the step that turns it
/// into an array (to_uint8, normalize); otherwise an N-d array. Copies share an image's pixels
/// (cv::Mat is ref-counted), but steps never write into an image in place, they replace it,
/// so work on one copy never shows through in another.
struct field_value {
  cv::Mat image;
  host_array array;
  bool present = false;  ///< a step (or the record) has made it

  bool is_image() const noexcept { return !image.empty(); }
  /// Holds `m` (an image) from now on.
  void set(cv::Mat m) {
    image = std::move(m);
    array = host_array{};
    present = true;
  }
  /// Holds `a` (an array) from now on.
  void set(host_array a) {
    image.release();
    array = std::move(a);
    present = true;
  }
};

/// Work an external step runs elsewhere for a sample (external_step.hpp): what it needs to
/// wait for the work's end, and to abandon it when destroyed.
class pending_work {
 public:
  virtual ~pending_work() = default;
};

/// Not synchronised: one owner at a time (move it between actors).
struct sample_state {
  std::uint64_t sample_id = 0;   ///< index in the dataset; with epoch_seed, picks the randomness
  std::string key;               ///< file name or shard/record, for error messages
  std::uint64_t epoch_seed = 0;  ///< seed of the current epoch
  /// The record's payload: one part, or a part container (core/storage/record_parts.hpp)
  /// when `multipart`. Freed once no step reads a part any more.
  std::vector<std::uint8_t> encoded;
  bool multipart = false;
  /// The parts its reader left in their file (record::in_place): only these are descriptors.
  std::vector<std::uint32_t> in_place{};
  /// By field index of the chain (transform_chain::schema() and the fields steps use while
  /// they work); transform_chain::start sizes it and sets the record's label.
  std::vector<field_value> fields;
  std::int64_t source_pixels = 0;  ///< width x height from the image header; 0 if unknown
  /// Set by a scaled decode step for the random_resized_crop or resize right after it: the box
  /// that step would have drawn (same rng), or the whole image, which it uses, and then clears.
  std::optional<planned_crop> crop_plan;
  /// Set by the caller (parity tests): the box random_resized_crop takes, and a scaled decode
  /// plans for, instead of drawing one. Inside the image.
  std::optional<crop_box> given_box;
  /// Set by the caller (exactness tests): the volume steps take their draws from it, in the
  /// reference's order, instead of from their generators (step_draws.hpp).
  std::shared_ptr<step_draws> given_draws;
  /// The work of an external step in flight (external_step.hpp), from its begin to its end;
  /// dropping the last holder abandons the work. Moves with the sample (a copy of a state,
  /// which tests make, shares it).
  std::shared_ptr<pending_work> pending;
  /// When that step began (its time counts from then, whoever waits for its end).
  std::chrono::steady_clock::time_point pending_since{};
  std::size_t next_step = 0;          ///< index of the next step of the chain to run
  std::vector<std::int64_t> step_ns;  ///< wall time of each completed step, in nanoseconds
};

/// Gives `s` the record its reader read: the key, payload, multipart flag and in-place parts
/// (the label is transform_chain::start's).
inline void hold_record(sample_state& s, record r) {
  s.key = std::move(r.key);
  s.encoded = std::move(r.payload);
  s.multipart = r.multipart;
  s.in_place = std::move(r.in_place);
}

/// The box random_resized_crop takes in a `width` x `height` image: the sample's given_box
/// when set, otherwise one drawn with `params` and `rng`.
inline crop_box crop_box_for(const sample_state& sample, int width, int height,
                             const rrc_params& params, std::mt19937_64& rng) {
  return sample.given_box ? *sample.given_box : random_resized_crop_box(width, height, params, rng);
}

/// The draws a volume step takes: the sample's given_draws when set, otherwise `own` (over the
/// step's generator).
inline step_draws& draws_for(const sample_state& sample, rng_draws& own) {
  return sample.given_draws ? *sample.given_draws : own;
}

}  // namespace conveyor
