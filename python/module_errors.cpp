#include "python/module_errors.hpp"

#include <chrono>
#include <string>

namespace conveyor_python {

namespace {

// The exception classes (new references kept for the life of the process: the modules are
// never unloaded, and no destructor runs at interpreter exit).
struct exception_classes {
  PyObject* error = nullptr;         // conveyor.Error(RuntimeError)
  PyObject* end_of_data = nullptr;   // conveyor.EndOfData(Error)
  PyObject* timeout = nullptr;       // conveyor.TimeoutError(Error, TimeoutError)
  PyObject* disconnected = nullptr;  // conveyor.Disconnected(Error)
  PyObject* not_found = nullptr;     // conveyor.NotFound(Error): no node at the socket
  PyObject* permission = nullptr;    // conveyor.PermissionError(Error)
};
exception_classes classes;

PyObject* new_exception(py::module_& m, const char* name, py::handle bases, const char* doc) {
  const std::string qualified = std::string("conveyor.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (cls == nullptr) {
    throw py::error_already_set();
  }
  m.add_object(name, py::reinterpret_borrow<py::object>(cls));
  return cls;  // the new reference stays with `classes`
}

PyObject* class_named(const py::module_& native, const char* name) {
  return py::object(native.attr(name)).release().ptr();  // kept for the life of the process
}

/// Raises `cls(message)` with `.code` set to `code` (an errc name).
[[noreturn]] void raise_as(PyObject* cls, const std::string& message, std::string_view code) {
  py::object exc = py::reinterpret_borrow<py::object>(cls)(message);
  exc.attr("code") = py::str(std::string(code));
  PyErr_SetObject(cls, exc.ptr());
  throw py::error_already_set();
}

/// The class an error raises. `attaching`: errc::not_found means "no node there", not the end
/// of the data.
PyObject* class_of(conveyor::errc code, bool attaching) {
  switch (code) {
    case conveyor::errc::not_found:
      return attaching ? classes.not_found : classes.end_of_data;
    case conveyor::errc::timed_out:
      return classes.timeout;
    case conveyor::errc::disconnected:
      return classes.disconnected;
    case conveyor::errc::permission_denied:
      return classes.permission;
    default:
      return classes.error;
  }
}

}  // namespace

void create_exceptions(py::module_& native) {
  classes.error = new_exception(native, "Error", PyExc_RuntimeError,
                                "A Conveyor error: the node's message; .code is the error's "
                                "name (e.g. 'invalid_argument').");
  py::handle base(classes.error);
  classes.end_of_data =
      new_exception(native, "EndOfData", base, "Every epoch has been handed out: no more batches.");
  classes.timeout =
      new_exception(native, "TimeoutError", py::make_tuple(base, py::handle(PyExc_TimeoutError)),
                    "No batch (or answer) came from the node within the time allowed.");
  classes.disconnected =
      new_exception(native, "Disconnected", base, "The node has gone (it exited or failed).");
  classes.not_found =
      new_exception(native, "NotFound", base, "No Conveyor node listens on the socket.");
  classes.permission = new_exception(native, "PermissionError", base,
                                     "The node's socket does not admit this user (serve.mode).");
}

void import_exceptions(const py::module_& native) {
  classes.error = class_named(native, "Error");
  classes.end_of_data = class_named(native, "EndOfData");
  classes.timeout = class_named(native, "TimeoutError");
  classes.disconnected = class_named(native, "Disconnected");
  classes.not_found = class_named(native, "NotFound");
  classes.permission = class_named(native, "PermissionError");
}

void raise_error(const conveyor::error& e, bool attaching) {
  raise_as(class_of(e.code(), attaching), e.message(), conveyor::to_string(e.code()));
}

void raise_plain(const conveyor::error& e) {
  raise_as(classes.error, e.message(), conveyor::to_string(e.code()));
}

void raise_timeout(const std::string& message) {
  raise_as(classes.timeout, message, conveyor::to_string(conveyor::errc::timed_out));
}

void raise_usage(const std::string& message) {
  raise_as(classes.error, message, conveyor::to_string(conveyor::errc::invalid_argument));
}

void check_signals() {
  if (PyErr_CheckSignals() != 0) {
    throw py::error_already_set();
  }
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::ceil<std::chrono::milliseconds>(std::chrono::duration<double>(seconds));
}

}  // namespace conveyor_python
