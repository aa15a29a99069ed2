#pragma once
/// How the fields of one batch lie in one contiguous buffer (a ring slot's host memory, the
/// body of a shared-memory slot), and the collate that writes them there. The layout is fixed
/// at start from the schema and the batch size, so that a buffer never grows (shared memory a
/// client has mapped cannot): each field has room for batch_size samples at their largest
/// (stack: the fixed shape; pad: max_shape; ragged: max_values rows each), plus its lengths (pad)
/// or offsets (ragged). Each batch then says, per field, what it holds: its shape and where
/// (batch_field).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/field_schema.hpp"
#include "core/batching/prepared_sample.hpp"
#include "core/transforms/normalize_table.hpp"

namespace conveyor {

/// The room of one field in a batch buffer. Offsets from the buffer's start, each aligned to a
/// cache line.
struct field_region {
  std::size_t values = 0;       ///< the values
  std::size_t value_bytes = 0;  ///< room for them
  std::size_t lengths = 0;      ///< pad: int32 [batch_size, padded axes]
  std::size_t offsets = 0;      ///< ragged: int64 [batch_size + 1]
  /// pad: the axes that may vary (those whose extent varies in the schema), in order.
  std::vector<int> padded_axes;
};

/// Plain value.
struct blob_layout {
  std::uint64_t batch_size = 0;
  std::vector<field_region> fields;  ///< by schema index
  std::size_t bytes = 0;             ///< the whole buffer

  /// The layout of `schema`'s fields for batches of up to `batch_size` samples (the schema's
  /// dtypes are the batch's: a field normalised at collate is float32 there).
  /// errc::invalid_config naming the field when its collate cannot be laid out (a stack field
  /// whose shape varies, a pad without max_shape for an axis that varies, a ragged field of
  /// rank 0 or without max_values).
  static expected<blob_layout> make(const sample_schema& schema, std::uint64_t batch_size);
};

/// Batch rank at most: a sample's rank plus the batch axis.
inline constexpr int max_batch_rank = host_array::max_rank + 1;

/// One field of one batch: its shape and where its values, lengths and offsets lie in the
/// buffer (offsets from its start; lengths and offsets only for pad and ragged).
struct batch_field {
  dtype type = dtype::uint8;
  /// stack, pad: the sample's rank + 1, samples first; ragged: the sample's, rows first.
  int rank = 0;
  std::array<std::int64_t, max_batch_rank> shape{};
  std::size_t values = 0;
  std::size_t lengths = 0;
  int length_axes = 0;  ///< pad: lengths is int32 [samples, length_axes]
  std::size_t offsets = 0;
  std::uint32_t samples = 0;

  std::size_t elements() const noexcept;
  std::size_t bytes() const noexcept { return elements() * size_of(type); }
};

/// The final normalize run as a uint8 CHW field is written into the batch (its batch dtype is
/// float32): normalize at collate. The field is stacked or padded (a padded field's fill value
/// is a float of the normalised batch); never ragged (resolve_fields refuses it).
struct collate_normalize {
  std::size_t field = 0;
  normalize_table table;
};

/// Writes the fields of `plan`'s samples into `buffer` as `layout` and `schema` say (the
/// samples' fields fit: the preprocessors checked them with unfit_for_batch), and returns where
/// each lies. An empty plan (an end-of-epoch marker) writes nothing and describes empty fields.
/// Precondition: `buffer` holds layout.bytes, aligned for any scalar type.
std::vector<batch_field> collate_batch(const batch_plan& plan, const sample_schema& schema,
                                       const blob_layout& layout, std::uint8_t* buffer,
                                       const collate_normalize* normalize = nullptr);

}  // namespace conveyor
