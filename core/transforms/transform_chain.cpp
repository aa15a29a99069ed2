#include "core/transforms/transform_chain.hpp"

#include <chrono>
#include <random>
#include <string>

namespace conveyor {
namespace {

bool writes_output(const transform_spec& spec) {
  return std::holds_alternative<normalize_spec>(spec) ||
         std::holds_alternative<to_uint8_spec>(spec);
}

error bad_order(const std::string& what) {
  return error(errc::invalid_config, what);
}

/// Every other step needs the decoded image, and the batcher needs the output tensor.
expected<void> check_order(const std::vector<transform_spec>& specs) {
  if (specs.empty()) {
    return bad_order("transform chain is empty (it needs at least decode and normalize)");
  }
  for (std::size_t i = 0; i < specs.size(); ++i) {
    bool first = i == 0;
    bool last = i + 1 == specs.size();
    bool decode = std::holds_alternative<decode_spec>(specs[i]);
    std::string where =
        "transform " + std::to_string(i) + " (" + std::string(op_name(specs[i])) + "): ";
    if (first && !decode) {
      return bad_order(where + "the first transform must be decode");
    }
    if (!first && decode) {
      return bad_order(where + "decode may only be the first transform");
    }
    if (last && !writes_output(specs[i])) {
      return bad_order(where + "the last transform must be normalize or to_uint8");
    }
    if (!last && writes_output(specs[i])) {
      return bad_order(where + "normalize and to_uint8 may only be the last transform");
    }
  }
  return {};
}

/// Step i of `specs`. The decode step (first, check_order made sure) learns which step follows
/// it, to plan a reduced decode for a crop.
expected<step_ptr> make_chain_step(const std::vector<transform_spec>& specs, std::size_t i) {
  if (i == 0) {
    return make_decode_step(std::get<decode_spec>(specs[0]),
                            specs.size() > 1 ? &specs[1] : nullptr);
  }
  return make_step(specs[i]);
}

}  // namespace

expected<transform_chain> transform_chain::build(const std::vector<transform_spec>& specs) {
  if (auto ok = check_order(specs); !ok) {
    return std::move(ok).error();
  }
  auto steps = std::make_shared<std::vector<step_ptr>>();
  steps->reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    auto step = make_chain_step(specs, i);
    if (!step) {
      return error(errc::invalid_argument,
                   "transform " + std::to_string(i) + ": " + step.error().message());
    }
    steps->push_back(std::move(*step));
  }
  return transform_chain(std::move(steps));
}

expected<void> transform_chain::run_next(sample_state& sample) const {
  if (done(sample)) {
    return error(errc::invalid_argument, sample_location(sample) +
                                             ": no step left to run (next_step " +
                                             std::to_string(sample.next_step) + " of a " +
                                             std::to_string(size()) + "-step chain)");
  }
  std::mt19937_64 rng = step_rng(sample, sample.next_step);
  auto start = std::chrono::steady_clock::now();
  auto result = step(sample.next_step).apply(sample, rng);
  auto elapsed = std::chrono::steady_clock::now() - start;
  if (!result) {
    return result;
  }
  sample.step_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  ++sample.next_step;
  return {};
}

expected<void> transform_chain::run_all(sample_state& sample) const {
  while (!done(sample)) {
    if (auto ok = run_next(sample); !ok) {
      return ok;
    }
  }
  return {};
}

}  // namespace conveyor
