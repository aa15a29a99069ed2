#pragma once
/// Internal to config/: the [[transform]] tables of a topology -> transform specs.

#include <vector>

#include "config/schema_reader.hpp"
#include "config/topology.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor::config_detail {

/// The transform chain of a node and where its normalize step runs.
struct transform_list {
  std::vector<transform_spec> specs;
  sample_schema schema;  ///< the fields the chain leaves (empty after a report)
  bool normalize_on_gpu = false;
  output_dtype normalize_dtype = output_dtype::float32;
};

/// Reads the required, non-empty `transform` array of tables of `root`: each table's op and
/// its parameters (unknown keys are reported), each spec checked by check_params and the whole
/// chain by transform_chain::build (its fields: reported at the step that names a field no step
/// before makes). Problems go to root's report.
transform_list read_transforms(table_reader& root);

}  // namespace conveyor::config_detail
