#pragma once
// A run's figures and its resume state as Python sees them, for both transports (a node's
// feed, a pipeline in this process): report() as a dict, state_dict() as PyTorch's convention
// has it ({"conveyor_state": bytes}). Called with the GIL held.

#include <pybind11/pybind11.h>

#include <string>

#include "conveyor/batch.hpp"
#include "conveyor/run_state.hpp"

namespace conveyor_python {

namespace py = pybind11;

/// delivered, quarantined, filtered, duplicates, lost, steps_executed, retries, restarts,
/// handoffs, hangs, finished, and sample_ms {samples, mean, p50, p90, p99, max}.
py::dict report_dict(const conveyor::pipeline_report& r);

/// {"conveyor_state": the state's bytes}.
py::dict state_dict(const conveyor::run_state& state);

/// The state given as `state=`: a state_dict() or its bytes; None: an empty state (a fresh
/// start). `caller` ("conveyor.attach") and `maker` ("Feed") name them in the conveyor.Error
/// raised for anything else.
conveyor::run_state state_from(const py::object& state, const std::string& caller,
                               const std::string& maker);

}  // namespace conveyor_python
