#pragma once
/// The shape and element type every sample has after a transform chain, known from its specs
/// alone, before any sample runs: what a shared-memory feed needs to size its slots.

#include <vector>

#include "conveyor/error.hpp"
#include "core/base/sample_geometry.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor {

/// The geometry of what `specs` (a list transform_chain::build accepts) produce: 3 channels
/// (decode gives RGB), the size of the last step that fixes one (random_resized_crop,
/// center_crop, resize to height x width), float32 after normalize, uint8 after to_uint8.
/// errc::invalid_config when no step fixes the size after the last one that varies it (decode,
/// resize of the shorter side): samples would not share one shape. Pure.
expected<sample_geometry> output_geometry(const std::vector<transform_spec>& specs);

}  // namespace conveyor
