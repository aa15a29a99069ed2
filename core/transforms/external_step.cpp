#include "core/transforms/external_step.hpp"

namespace conveyor {

expected<void> external_step::apply(sample_state& sample, std::mt19937_64& rng) const {
  if (!sample.pending) {
    if (auto begun = begin(sample, rng); !begun) {
      return begun;
    }
  }
  for (;;) {
    auto ended = wait(sample, std::chrono::seconds(1));  // the step bounds the work itself
    if (!ended) {
      return ended.error();
    }
    if (*ended) {
      return {};
    }
  }
}

expected<step_ptr> make_step(const built_step_spec& spec, chain_fields& fields) {
  return spec.make(fields);
}

expected<void> check_params(const built_step_spec& spec) {
  if (!spec.make) {
    return error(errc::invalid_argument, "step '" + spec.name + "' has nothing to build it");
  }
  return {};
}

}  // namespace conveyor
