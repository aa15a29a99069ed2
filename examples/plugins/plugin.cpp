// The plugin's entry point: what `[plugins] libraries = ["/path/libexample_steps.so"]` loads.
#include "example_steps.hpp"

namespace {

void register_example_steps(conveyor::step_registrar& registrar) {
  registrar.add("salt_pepper", example::make_salt_pepper);
  registrar.add("token_ids", example::make_token_ids);
}

}  // namespace

CONVEYOR_PLUGIN(register_example_steps)
