#pragma once
// What both extension modules (conveyor._native, conveyor._pipeline) raise and how they wait:
// conveyor.Error and its subclasses, made once by _native and looked up from it by _pipeline
// (one hierarchy for every error of the package), and the GIL-free calls between signal
// checks. Every function here is called with the GIL held.

#include <pybind11/pybind11.h>

#include <chrono>
#include <string>
#include <string_view>
#include <utility>

#include "conveyor/error.hpp"

namespace conveyor_python {

namespace py = pybind11;

/// The longest wait between two checks for a signal (Ctrl-C).
inline constexpr std::chrono::milliseconds slice{100};

/// Creates conveyor.Error and its subclasses in `native` (the module _native). Once.
void create_exceptions(py::module_& native);
/// Takes the classes create_exceptions() made from `native` (a module that links this code
/// again, so has its own copy of them). Once.
void import_exceptions(const py::module_& native);

/// Raises the class of `e`'s code (conveyor.TimeoutError for timed_out, conveyor.EndOfData for
/// not_found, ...) with `e`'s message and `.code` its errc name. `attaching`: not_found means
/// "no node there" (conveyor.NotFound), not the end of the data.
[[noreturn]] void raise_error(const conveyor::error& e, bool attaching = false);
/// Raises conveyor.Error itself, whatever `e`'s code (still its `.code`): for the errors of
/// opening a pipeline, where not_found is a missing file, not the end of the data.
[[noreturn]] void raise_plain(const conveyor::error& e);
/// Raises conveyor.TimeoutError with `message` (code timed_out).
[[noreturn]] void raise_timeout(const std::string& message);
/// A plain conveyor.Error of the module itself (a closed feed, a released batch), code
/// invalid_argument.
[[noreturn]] void raise_usage(const std::string& message);

/// Raises what a pending signal handler raised (KeyboardInterrupt for Ctrl-C), if any.
void check_signals();

std::chrono::milliseconds to_ms(double seconds);

/// Runs `f`, a call that may block (a send to the node, the CUDA driver, a drain of the
/// socket, a pipeline's shutdown), without the GIL: a trainer that drives its GPUs from
/// threads goes on in its other threads meanwhile.
template <class F>
void without_gil(F&& f) {
  py::gil_scoped_release nogil;
  std::forward<F>(f)();
}

}  // namespace conveyor_python
