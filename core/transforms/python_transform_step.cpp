// The fields of a topology's Python step (transform_spec.hpp: python_transform_spec), bound as
// a public API step's are (field_bindings.hpp); the step itself runs in Python worker processes
// (core/python/python_transform.hpp), which the pipeline binds to the spec.

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/transforms/chain_fields.hpp"
#include "core/transforms/field_bindings.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

/// The step of a topology only loaded (never run): nothing runs its function.
class unbound_python_step final : public transform_step {
 public:
  explicit unbound_python_step(std::string where) : where_(std::move(where)) {}
  std::string_view name() const noexcept override { return "python"; }
  expected<void> apply(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    return sample_error(errc::invalid_config, sample, name(),
                        where_ + " runs only in a pipeline, whose Python workers call it");
  }

 private:
  std::string where_;
};

/// The arrays a Python step reads: NumPy holds every dtype but bfloat16; byte strings are not
/// arrays.
expected<void> check_readable(const std::vector<field_binding>& reads) {
  for (const auto& r : reads) {
    if (r.type.kind != field_kind::tensor || r.type.type == dtype::bfloat16) {
      return error(errc::invalid_config, "field '" + r.name + "' is " + describe(r.type) +
                                             ", which NumPy holds as no array: a Python step "
                                             "reads arrays of any other dtype");
    }
  }
  return {};
}

/// What it makes, as field_made: declared, or the type of the field of that name it reads.
expected<std::vector<field_made>> declared_makes(const python_transform_spec& spec,
                                                 const std::vector<field_binding>& reads) {
  std::vector<field_made> out;
  for (std::size_t i = 0; i < spec.makes.size(); ++i) {
    const auto& name = spec.makes[i];
    if (!spec.dtypes.empty()) {
      out.emplace_back(name, spec.dtypes[i], spec.ranks[i]);
      continue;
    }
    const auto* like = find_binding(reads, name);
    if (like == nullptr) {
      return error(errc::invalid_config,
                   "field '" + name +
                       "' is made without `dtypes` and `ranks`, so it takes the type of the "
                       "field of that name the step reads, and it reads none");
    }
    out.emplace_back(name, like->type.type, like->type.rank, name);
  }
  return out;
}

bool has_repeats(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return std::adjacent_find(names.begin(), names.end()) != names.end();
}

bool is_dotted_name(const std::string& s) {
  if (s.empty() || s.front() == '.' || s.back() == '.' || s.find("..") != std::string::npos) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == '.' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z');
  });
}

}  // namespace

expected<step_ptr> make_step(const python_transform_spec& spec, chain_fields& fields) {
  std::vector<field_read> wanted(spec.reads.begin(), spec.reads.end());
  auto reads = bind_reads(wanted, fields);
  if (!reads) {
    return std::move(reads).error();
  }
  if (auto ok = check_readable(*reads); !ok) {
    return std::move(ok).error();
  }
  auto declared = declared_makes(spec, *reads);
  if (!declared) {
    return std::move(declared).error();
  }
  auto makes = bind_makes(*declared, *reads, fields);
  if (!makes) {
    return std::move(makes).error();
  }
  if (!spec.bind) {
    return step_ptr(std::make_unique<unbound_python_step>(spec.where));
  }
  return spec.bind(*reads, *makes);
}

expected<void> check_params(const python_transform_spec& spec) {
  const auto colon = spec.function.find(':');
  if (colon == std::string::npos || !is_dotted_name(spec.function.substr(0, colon)) ||
      !is_dotted_name(spec.function.substr(colon + 1))) {
    return error(errc::invalid_argument,
                 "function = \"" + spec.function + "\": expected \"package.module:callable\"");
  }
  if (spec.makes.empty()) {
    return error(errc::invalid_argument, "makes: a Python step makes at least one field");
  }
  if (has_repeats(spec.reads) || has_repeats(spec.makes)) {
    return error(errc::invalid_argument, "reads and makes name each field once");
  }
  if (spec.dtypes.size() != spec.ranks.size() ||
      (!spec.dtypes.empty() && spec.dtypes.size() != spec.makes.size())) {
    return error(errc::invalid_argument,
                 "dtypes and ranks: both or neither, one entry per field in makes (" +
                     std::to_string(spec.makes.size()) + ")");
  }
  for (std::size_t i = 0; i < spec.dtypes.size(); ++i) {
    if (spec.dtypes[i] == dtype::bfloat16 || spec.ranks[i] < 0 ||
        spec.ranks[i] > host_array::max_rank) {
      return error(errc::invalid_argument,
                   "field '" + spec.makes[i] +
                       "': a Python step makes a NumPy array of rank 0 to " +
                       std::to_string(host_array::max_rank) + " of any dtype but bfloat16");
    }
  }
  return {};
}

}  // namespace conveyor
