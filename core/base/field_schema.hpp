#pragma once
/// The named fields of a sample, as a topology's transform chain makes them (the data model of
/// README "Samples: named fields"): each field has a name, what it holds (an N-d tensor, or a
/// short byte string), its dtype, its rank per sample and, per axis, its extent when every
/// sample has the same one; and how a batch carries it (collate_spec). Names are resolved once,
/// when the topology is loaded: steps, the batcher and the feeders address fields by index.
/// Plain values; pure functions.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/dtype.hpp"
#include "core/base/host_array.hpp"

namespace conveyor {

/// The field every chain starts with: the record's class label, an int32 scalar.
inline constexpr std::string_view label_field_name = "label";

/// What a field holds: an N-d array, or a byte string (a transcript, a caption: a uint8 array
/// of rank 1 whose consumers read it as bytes).
enum class field_kind : std::uint8_t { tensor = 0, bytes = 1 };

/// An extent that varies from sample to sample.
inline constexpr std::int64_t varies = -1;

/// A field's type: what it holds, dtype, rank per sample (0..host_array::max_rank) and each
/// axis's extent (or `varies`).
struct field_type {
  field_kind kind = field_kind::tensor;
  dtype type = dtype::uint8;
  int rank = 0;
  host_array::shape_type shape{};

  /// Every extent is fixed.
  bool fixed() const noexcept;
  /// `a` has this type: the same dtype and rank, and each fixed extent.
  bool admits(const host_array& a) const noexcept;
  bool operator==(const field_type& o) const noexcept;
  bool operator!=(const field_type& o) const noexcept { return !(*this == o); }
};

/// "float32 [3, 224, 224]", "int32 [?, 4]", "bytes [?]".
std::string describe(const field_type& t);

/// A field of `a`'s dtype, rank and shape.
field_type type_of(const host_array& a, field_kind kind = field_kind::tensor) noexcept;

/// How a batch carries a field (README "Variable-size batches"):
/// - stack: every sample has the same shape: N x shape.
/// - pad: each axis whose extent varies is padded to the batch's largest (rounded up to a
///   multiple of `multiple`) with `value`, up to `max_shape`; an int32 `lengths` tensor
///   [N, padded axes] gives each sample's own extents.
/// - ragged: the samples' values one after another along their first axis, [total, ...rest],
///   and int64 `offsets` [N + 1]: sample i is rows offsets[i] .. offsets[i + 1]; each sample
///   has at most `max_values` rows.
enum class collate_mode : std::uint8_t { stack = 0, pad = 1, ragged = 2 };

std::string_view to_string(collate_mode mode) noexcept;

struct collate_spec {
  collate_mode mode = collate_mode::stack;
  std::int64_t multiple = 1;  ///< pad: extents rounded up to a multiple of it (>= 1)
  double value = 0;           ///< pad: the fill value
  /// pad: the largest extent of each axis a sample may have. Slots are sized by it: a sample
  /// beyond it is quarantined, never a reallocation. (Ragged fields vary in their first axis
  /// only; the others are the field's fixed extents.)
  host_array::shape_type max_shape{};
  /// ragged: rows (first-axis entries) of one sample, at most. A batch has room for
  /// batch_size times as many, so that any batch of samples that fit fits: a sample beyond it
  /// is quarantined, as past a padded field's max_shape.
  std::int64_t max_values = 0;
};

/// A field of a sample: its name, type, and how it is batched.
struct field_spec {
  std::string name;
  field_type type;
  collate_spec collate;
};

/// The fields a chain leaves in every prepared sample, in index order: what a batch carries.
struct sample_schema {
  std::vector<field_spec> fields;

  /// The index of the field named `name`, if there is one.
  std::optional<std::size_t> index_of(std::string_view name) const noexcept;
  const field_spec* find(std::string_view name) const noexcept;
};

/// Why `a` (the value a sample's chain left in field `f`) cannot go into a batch as `f` is
/// carried (a shape a stack field cannot take, an extent past a padded field's max_shape, more
/// rows than a ragged field's max_values); nullopt when it can. A batch of samples that each
/// fit fits its blob_layout (core/delivery/batch_blob.hpp).
std::optional<std::string> unfit_for_batch(const field_spec& f, const host_array& a);

}  // namespace conveyor
