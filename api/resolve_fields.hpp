#pragma once
/// The fields a topology's samples and batches have, resolved before any pipeline runs: the
/// transform chain the preprocessors run (its final normalize moved to the feeders,
/// core/transforms/normalize_placement.hpp), the chain's fields with the topology's
/// [collate] applied, and those fields as a batch's buffer holds them. What a pipeline and a
/// serving node's shared memory are laid out by. Errors are configuration errors that name the
/// file and the key.

#include <cstddef>
#include <memory>
#include <optional>

#include "config/topology.hpp"
#include "conveyor/error.hpp"
#include "core/base/field_schema.hpp"
#include "core/delivery/batch_blob.hpp"
#include "core/transforms/transform_chain.hpp"

namespace conveyor {

struct resolved_fields {
  transform_chain chain;
  /// The chain's fields with their collates: what each prepared sample must fit.
  std::shared_ptr<const sample_schema> schema;
  /// As a batch's buffer holds them: a field normalised at collate on the CPU is float32.
  std::shared_ptr<const sample_schema> batch_schema;
  blob_layout layout;  ///< of batch_schema, for pipeline.batch_size samples
  /// The chain's final normalize, which the feeders run on `normalize_field`.
  std::optional<normalize_spec> in_feeder;
  std::size_t normalize_field = 0;
};

/// `normalize_on_device`: the feeders are CUDA feeders that normalise on the GPU (the batch's
/// host buffer keeps that field uint8).
expected<resolved_fields> resolve_fields(const topology& t, bool normalize_on_device);

}  // namespace conveyor
