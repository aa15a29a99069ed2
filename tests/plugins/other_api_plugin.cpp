// A plugin built against another step API version: a node must refuse it before running any
// of it, its static initialisers included (test_step_plugins.cpp looks for their mark).
#include <cstdlib>

#include <conveyor/step.hpp>

namespace {

/// Marks the process, as a static initialiser built against another API could do anything.
struct marks_the_process {
  marks_the_process() { ::setenv("CONVEYOR_OTHER_API_PLUGIN_RAN", "1", 1); }
};
[[maybe_unused]] const marks_the_process mark;

}  // namespace

extern "C" __attribute__((visibility("default"))) const int conveyor_step_api_version =
    CONVEYOR_STEP_API_VERSION + 41;
extern "C" __attribute__((visibility("default"))) void conveyor_register_steps(
    conveyor::step_registrar* /*registrar*/) {
  std::abort();  // never called: the version is checked first
}
