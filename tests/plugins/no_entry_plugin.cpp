// A plugin with the version symbol but no entry point (conveyor_register_steps).
#include <conveyor/step.hpp>

extern "C" __attribute__((visibility("default"))) const int conveyor_step_api_version =
    CONVEYOR_STEP_API_VERSION;
