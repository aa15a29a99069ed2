// A plugin built against another step API version: a node must refuse it before calling it.
#include <cstdlib>

#include <conveyor/step.hpp>

extern "C" __attribute__((visibility("default"))) const int conveyor_step_api_version =
    CONVEYOR_STEP_API_VERSION + 41;
extern "C" __attribute__((visibility("default"))) void conveyor_register_steps(
    conveyor::step_registrar* /*registrar*/) {
  std::abort();  // never called: the version is checked first
}
