#pragma once
/// The fields a step declares it reads and makes (include/conveyor/step.hpp's field_read and
/// field_made), bound to their indices in a chain being built: a step of the public step API
/// (user_step.hpp) and a topology's Python step (core/python/python_transform.hpp) bind the same
/// way. A field read must exist with the dtype and rank asked for; a field made is typed for the
/// steps after it; a uint8 rank-3 array made into a field that holds an image stays an image.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/step.hpp"
#include "core/transforms/chain_fields.hpp"

namespace conveyor {

/// A field of a sample a step reads or makes, bound to its index in the chain.
struct field_binding {
  std::string name;
  std::size_t index = 0;
  field_type type;     ///< reads: as the steps before left it; makes: as it makes it
  bool image = false;  ///< the field holds an image (cv::Mat) there
};

/// The binding of `name` in `in`; null when there is none.
const field_binding* find_binding(const std::vector<field_binding>& in, std::string_view name);

/// Binds `declared` to the fields the steps before made. errc::invalid_config naming the field,
/// its type there and the step that made it when it is missing or of another dtype or rank.
expected<std::vector<field_binding>> bind_reads(const std::vector<field_read>& declared,
                                                const chain_fields& fields);

/// Declares `declared` in `fields` (made or changed now); `reads`: the step's bound reads,
/// which `same_shape_as` names. errc::invalid_config naming the field: a rank out of 0 to
/// host_array::max_rank, a same_shape_as the step does not read with that rank.
expected<std::vector<field_binding>> bind_makes(const std::vector<field_made>& declared,
                                                const std::vector<field_binding>& reads,
                                                chain_fields& fields);

/// A made array of `type` and `shape` fits the field type `want` (dtype, rank, fixed extents).
bool fits(const field_type& want, dtype type, const array_shape& shape) noexcept;

}  // namespace conveyor
