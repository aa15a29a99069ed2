#pragma once
/// The fields of a transform chain while its steps are built in order (the names a topology's
/// steps use, resolved to indices once): each step looks up the fields it reads, with their
/// type as the steps before it left them, and declares what it writes. What is left at the end
/// is the chain's sample_schema (core/base/field_schema.hpp). Errors are configuration errors
/// that name the step and the field. Field 0 is always "label": the record's class label, an
/// int32 scalar (0 for records without one).
///
/// An image (field_value::image: height x width x channels uint8, as a decode leaves it) is
/// typed rank 3 [h, w, c] with image() true; a chain must turn every image into an array (to_uint8,
/// normalize) before it ends.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/field_schema.hpp"

namespace conveyor {

/// The label field's index in a chain (its name is label_field_name, field_schema.hpp).
inline constexpr std::size_t label_field = 0;

/// Not synchronised; used while a chain is built.
class chain_fields {
 public:
  chain_fields();

  /// The index of field `name` for a step that reads it; errc::invalid_config naming the
  /// field and the fields there are when no step before made it.
  expected<std::size_t> read(std::string_view name) const;
  /// The index of field `name`, made now (or, when it exists, changed) to hold `type`;
  /// `image`: it holds an image (see above).
  std::size_t write(std::string_view name, const field_type& type, bool image = false);
  /// Forgets a field (a step that consumed it): it is not in the schema at the end.
  void drop(std::size_t index);
  /// The step being built from now on ("transform 2 (tokenize)"): what write() records as the
  /// maker of the fields it makes or changes.
  void begin_step(std::string step) { step_ = std::move(step); }
  /// Which step last made or changed field `index` ("the record" for the label), for errors.
  const std::string& made_by(std::size_t index) const { return fields_[index].made_by; }

  const field_type& type(std::size_t index) const { return fields_[index].type; }
  const std::string& name(std::size_t index) const { return fields_[index].name; }
  bool image(std::size_t index) const { return fields_[index].image; }
  /// Fields ever made (indices are stable: a sample's fields vector has this size).
  std::size_t size() const noexcept { return fields_.size(); }

  /// The fields left at the end, in index order, each collated as a stack until the topology
  /// says otherwise; errc::invalid_config naming a field still an image.
  expected<sample_schema> schema() const;
  /// Where field i of the chain's samples lies in schema(): its index there, or -1 when it is
  /// not in it (dropped).
  std::vector<int> schema_positions() const;

 private:
  struct entry {
    std::string name;
    field_type type;
    bool image = false;
    bool live = true;
    std::string made_by;
  };
  std::vector<entry> fields_;
  std::string step_;
};

/// The index of array field `name` for step `op` that reads it; errc::invalid_config naming
/// the field, its type and the step that made it when it is no array of numbers (an image, a
/// byte string), or not of dtype `type` or rank `rank` where those are given.
expected<std::size_t> read_array(const chain_fields& fields, std::string_view op,
                                 const std::string& name, std::optional<dtype> type = std::nullopt,
                                 std::optional<int> rank = std::nullopt);

}  // namespace conveyor
